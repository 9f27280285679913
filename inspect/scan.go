package inspect

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/savepoint"
)

// stateScan is what a scan learns about one state or timer service beyond
// the index.
type stateScan struct {
	sizes sizeHist
	// ages is set for TTL states.
	ages *ageHist
	// maxTimersPerKey is for timer services.
	maxTimersPerKey uint64
}

func (s *stateScan) merge(o *stateScan) {
	s.sizes.merge(&o.sizes)
	if o.ages != nil {
		s.ages.merge(o.ages)
	}
	s.maxTimersPerKey = max(s.maxTimersPerKey, o.maxTimersPerKey)
}

// scanResult holds, per state and timer service, what the scan found, and
// the heaviest keys when asked for.
type scanResult struct {
	states             map[savepoint.StateRef]*stateScan
	byEntries, byBytes *topKeys
}

func newScanResult(m *savepoint.Metadata, now int64, top int) *scanResult {
	sc := &scanResult{states: map[savepoint.StateRef]*stateScan{}}
	for i := range m.Operators {
		for _, ref := range m.Refs(i) {
			st := &stateScan{}
			if ks := m.KeyedState(ref); ks != nil && ks.TTL != nil {
				st.ages = newAgeHist(ks.TTL.Millis(), now)
			}
			sc.states[ref] = st
		}
	}
	if top > 0 {
		sc.byEntries, sc.byBytes = newTopKeys(top, byEntries), newTopKeys(top, byBytes)
	}
	return sc
}

func (sc *scanResult) merge(o *scanResult) {
	for ref, st := range sc.states {
		st.merge(o.states[ref])
	}
	if sc.byEntries != nil {
		sc.byEntries.merge(o.byEntries)
		sc.byBytes.merge(o.byBytes)
	}
}

// segmentScanner scans segments into one worker's scanResult. It keeps
// buffers across segments so that the scan allocates nothing per entry.
type segmentScanner struct {
	m      *savepoint.Metadata
	res    *scanResult
	curKey []byte
	// timerKeys holds a hash of the key of every timer of a segment.
	timerKeys []uint64
	seed      maphash.Seed
	// sizes and times take a batch of values from NextValues.
	sizes [512]int
	times [512]int64
	// counts takes an iterator's counts of TTL times (timeCounter).
	counts [len(ageBuckets) + 2]uint64
}

func newSegmentScanner(m *savepoint.Metadata, now int64, top int) *segmentScanner {
	return &segmentScanner{m: m, res: newScanResult(m, now, top), seed: maphash.MakeSeed()}
}

// scan walks segs on n workers. Reading a segment to its end checks it
// against its figures (entries, distinct keys, bytes, TTL and timer time
// bounds), so a mismatch ends the scan as corruption. progress, when set,
// is told of each segment's Length once it is read.
func scan(ctx context.Context, src savepoint.Source, segs []savepoint.Segment, now int64, top, n int, progress func(int64)) (*scanResult, error) {
	m := src.Metadata()
	if n <= 0 {
		n = workers.Default()
	}
	scanners := make([]*segmentScanner, n)
	walk := savepoint.WalkSegments(ctx, src, segs)
	defer walk.Close()
	err := workers.Run(ctx, len(segs), n, func(ctx context.Context, w, i int) error {
		if scanners[w] == nil {
			// Built by the worker itself, so that its counters, written at
			// every entry, come from its own allocator and share no cache
			// line with another worker's.
			scanners[w] = newSegmentScanner(m, now, top)
		}
		it := walk.Entries(ctx, i)
		defer it.Close()
		if err := scanners[w].segment(segs[i].Ref, it); err != nil {
			return err
		}
		if progress != nil {
			progress(segs[i].Length)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := newSegmentScanner(m, now, top).res
	for _, s := range scanners {
		if s != nil {
			res.merge(s.res)
		}
	}
	return res, nil
}

// segment scans the entries of one (state, key group).
func (s *segmentScanner) segment(ref savepoint.StateRef, it savepoint.EntryIterator) error {
	st := s.res.states[ref]
	if ref.Timer {
		return s.timerSegment(st, it)
	}
	ttlOn := s.m.KeyedState(ref).TTL != nil
	if s.res.byEntries == nil {
		return s.valueSegment(st, ttlOn, it)
	}
	// --top needs every entry's key.
	cur := hotKey{ref: ref}
	for it.Next() {
		e := it.Entry()
		v := e.Value
		if ttlOn {
			// Every layout checks that a TTL value holds its timestamp.
			st.ages.add(int64(binary.BigEndian.Uint64(v)))
			v = v[8:]
		}
		st.sizes.add(len(v))
		// Keys are sorted within a segment and a key lives in one key
		// group, so a key is complete when the next one starts.
		if cur.entries == 0 || !bytes.Equal(e.Key, s.curKey) {
			s.offer(cur)
			s.curKey = append(s.curKey[:0], e.Key...)
			cur.key, cur.entries, cur.bytes = s.curKey, 0, 0
		}
		cur.entries++
		cur.bytes += uint64(len(e.MapKey) + len(e.Value))
	}
	s.offer(cur)
	return it.Err()
}

// timeCounter is implemented by the iterators that count for a scan, as
// they read, the TTL times at or before given cuts (snapshotfmt's, which
// checks the times against the index's histogram at the same time).
type timeCounter interface {
	CountTimes(cuts []int64) bool
	TimeCounts(counts []uint64)
}

// sizeCounter is implemented by the iterators that count the value sizes
// for a scan as they read them (snapshotfmt's, with the size histogram it
// checks against the index).
type sizeCounter interface {
	CountSizes(small []uint64, large func(size int, n uint64)) bool
}

// valueSegment gathers what a scan without --top needs of a state's
// segment, the value sizes and TTL times, in batches. The iterator counts
// the sizes and the ages itself where it can.
func (s *segmentScanner) valueSegment(st *stateScan, ttlOn bool, it savepoint.EntryIterator) error {
	sizes, times := s.sizes[:], s.times[:]
	var cuts []int64
	tc, _ := it.(timeCounter)
	if ttlOn && tc != nil {
		cuts = st.ages.atOrBefore()
	}
	countingTimes := cuts != nil && tc.CountTimes(cuts)
	sc, _ := it.(sizeCounter)
	countingSizes := sc != nil && sc.CountSizes(st.sizes.smallArray()[:], st.sizes.addLarge)
	var total uint64
	for {
		n := savepoint.NextValues(it, ttlOn, sizes, times)
		total += uint64(n)
		if ttlOn && !countingTimes {
			st.ages.addAll(times[:n])
		}
		if !countingSizes {
			st.sizes.addAll(sizes[:n])
		}
		if n == len(sizes) {
			continue
		}
		if err := it.Err(); err != nil {
			return err
		}
		if countingSizes {
			st.sizes.counted(total)
		}
		if countingTimes {
			counts := s.counts[:len(cuts)]
			tc.TimeCounts(counts)
			st.ages.addCounts(total, counts)
		}
		return nil
	}
}

func (s *segmentScanner) offer(k hotKey) {
	if k.entries == 0 {
		return
	}
	s.res.byEntries.offer(k)
	s.res.byBytes.offer(k)
}

// timerSegment finds the most timers one key has. Timers are sorted by
// time, not by key, so the keys are gathered for the segment (one key
// group) and sorted. They are gathered as 64-bit hashes, which costs no
// allocation per timer; two keys whose hashes collide would be counted as
// one, a chance of about one in 40 million for a key group with a million
// keys.
func (s *segmentScanner) timerSegment(st *stateScan, it savepoint.EntryIterator) error {
	s.timerKeys = s.timerKeys[:0]
	for it.Next() {
		s.timerKeys = append(s.timerKeys, maphash.Bytes(s.seed, it.Entry().Key))
	}
	st.maxTimersPerKey = max(st.maxTimersPerKey, longestRun(s.timerKeys))
	return it.Err()
}

// longestRun sorts hs and returns the length of its longest run of equal
// values.
func longestRun(hs []uint64) uint64 {
	slices.Sort(hs)
	var longest, run uint64
	for i := range hs {
		if i > 0 && hs[i] == hs[i-1] {
			run++
		} else {
			run = 1
		}
		longest = max(longest, run)
	}
	return longest
}
