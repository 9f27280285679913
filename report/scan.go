package report

import (
	"context"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/savepoint"
)

// log2Bins is how many power-of-two bins a histogram has: bits.Len of any
// int is below it.
const log2Bins = 64

// tally is what the pass learns of one state or timer service.
type tally struct {
	// bins counts values by bits.Len(size), or keys by bits.Len(timers).
	bins [log2Bins]uint64
}

// charts reads every segment of src once more for what inspect does not
// keep: the histograms of value sizes and of timers per key. The bytes per
// key group come from the index.
func charts(ctx context.Context, src savepoint.Source, sp *Savepoint, n int) (*Latest, error) {
	m := src.Metadata()
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		n = workers.Default()
	}
	perWorker := make([]map[savepoint.StateRef]*tally, n)
	seed := maphash.MakeSeed()
	// The workers take the segments in order: in a bucket the walk reads
	// the next ones ahead of them.
	walk := savepoint.WalkSegments(ctx, src, segs)
	defer walk.Close()
	err = workers.Run(ctx, len(segs), n, func(ctx context.Context, w, i int) error {
		if perWorker[w] == nil {
			perWorker[w] = map[savepoint.StateRef]*tally{}
		}
		seg := segs[i]
		t := perWorker[w][seg.Ref]
		if t == nil {
			t = &tally{}
			perWorker[w][seg.Ref] = t
		}
		it := walk.Entries(ctx, i)
		defer it.Close()
		if seg.Ref.Timer {
			return t.timers(it, seed)
		}
		return t.values(it, m.KeyedState(seg.Ref).TTL != nil)
	})
	if err != nil {
		return nil, err
	}
	total := map[savepoint.StateRef]*tally{}
	for _, pw := range perWorker {
		for ref, t := range pw {
			if total[ref] == nil {
				total[ref] = &tally{}
			}
			for i, c := range t.bins {
				total[ref].bins[i] += c
			}
		}
	}
	kgBytes := map[savepoint.StateRef][]uint64{}
	for _, seg := range segs {
		b := kgBytes[seg.Ref]
		if b == nil {
			b = make([]uint64, m.Operators[seg.Ref.Operator].MaxParallelism)
			kgBytes[seg.Ref] = b
		}
		b[seg.KeyGroup] += seg.Bytes
	}
	latest := &Latest{Savepoint: sp}
	for op := range m.Operators {
		o := &m.Operators[op]
		for _, ref := range m.Refs(op) {
			sc := StateCharts{Operator: o.UID, Name: m.RefName(ref), Timers: ref.Timer, Parallelism: o.Parallelism, MaxParallelism: o.MaxParallelism,
				KeyGroupBytes: kgBytes[ref]}
			if sc.KeyGroupBytes == nil {
				sc.KeyGroupBytes = make([]uint64, o.MaxParallelism)
			}
			var bins []Bin
			if t := total[ref]; t != nil {
				bins = t.report()
			}
			if ref.Timer {
				sc.TimersPerKey = bins
				sc.Timer = findTimer(sp.Inspect, o.UID, sc.Name)
			} else {
				sc.ValueSizes = bins
				sc.State = findState(sp.Inspect, o.UID, sc.Name)
			}
			latest.States = append(latest.States, sc)
		}
	}
	return latest, nil
}

func findState(r *inspect.Report, uid, name string) *inspect.StateInfo {
	for i := range r.States {
		if r.States[i].Operator == uid && r.States[i].Name == name {
			return &r.States[i]
		}
	}
	return nil
}

func findTimer(r *inspect.Report, uid, name string) *inspect.TimerInfo {
	for i := range r.Timers {
		if r.Timers[i].Operator == uid && r.Timers[i].Name == name {
			return &r.Timers[i]
		}
	}
	return nil
}

// values counts the sizes of a segment's values (without the TTL
// timestamp), in batches that need no Entry per value.
func (t *tally) values(it savepoint.EntryIterator, ttl bool) error {
	var sizes [512]int
	var times [512]int64
	for {
		n := savepoint.NextValues(it, ttl, sizes[:], times[:])
		for _, s := range sizes[:n] {
			t.bins[bitsLen(s)]++
		}
		if n < len(sizes) {
			return it.Err()
		}
	}
}

// timers counts the timers of each key of a segment. Timers are sorted by
// time, not key, so the keys of the segment (one key group) are gathered as
// 64-bit hashes and sorted, as inspect does for the most timers per key.
func (t *tally) timers(it savepoint.EntryIterator, seed maphash.Seed) error {
	var hs []uint64
	for it.Next() {
		hs = append(hs, maphash.Bytes(seed, it.Entry().Key))
	}
	if err := it.Err(); err != nil {
		return err
	}
	slices.Sort(hs)
	for i := 0; i < len(hs); {
		j := i + 1
		for j < len(hs) && hs[j] == hs[i] {
			j++
		}
		t.bins[bitsLen(j-i)]++
		i = j
	}
	return nil
}

// bitsLen is the bin of n: 0 for 0, k for [2^(k-1), 2^k - 1].
func bitsLen(n int) int { return bits.Len64(uint64(n)) }

// report returns the bins from the first that counts something to the
// last, bin k holding [2^(k-1), 2^k - 1] and bin 0 holding 0.
func (t *tally) report() []Bin {
	first, last := -1, -1
	for i, c := range t.bins {
		if c > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	var out []Bin
	for k := first; k <= last; k++ {
		b := Bin{Count: t.bins[k]}
		if k > 0 {
			b.Lo, b.Hi = int64(1)<<(k-1), int64(1)<<k-1
			if k == log2Bins-1 {
				b.Hi = math.MaxInt64
			}
		}
		out = append(out, b)
	}
	return out
}
