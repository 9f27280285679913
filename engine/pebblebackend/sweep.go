package pebblebackend

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// Sweep is the background TTL cleanup that Pebble's lack of a compaction
// filter calls for: for each TTL state with a sweep budget it examines up to
// that many entries, across the owned key groups, resuming after the entry
// where the previous call stopped and wrapping around at the end, and deletes
// those expired at now. No entry is examined twice in one call. An entry
// written only to the write cache is first examined in the round over the
// state after it was written.
func (b *Backend) Sweep(now int64) (int, error) {
	if err := b.check(); err != nil {
		return 0, err
	}
	total := 0
	for _, s := range b.states {
		if s.spec.TTL == nil || s.spec.TTL.SweepBudget <= 0 {
			continue
		}
		n, err := s.sweep(now)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (s *stateInfo) sweep(now int64) (deleted int, err error) {
	b := s.b
	if s.lowTime != math.MinInt64 && !s.spec.TTL.Expired(s.lowTime, now) {
		// Nothing the state holds is old enough to have expired. The state
		// an operator deletes as it completes (requests, sessions) is
		// mostly the deletion tombstones of what it held, which a step
		// would otherwise walk for little.
		return 0, nil
	}
	// The iterator reads below the cache. At the start of each round over
	// the state, this state's cached writes are spilled for it to see;
	// within a round it reads the cached version of each key it meets.
	// The rest of the cache stays, where the short-lived state of other
	// states keeps dying without reaching Pebble.
	if !s.sweepMidRound {
		if err := b.spillState(s.id); err != nil {
			return 0, err
		}
		s.sweepMidRound = true
		s.sinceSpill = math.MaxInt64
	}
	it, err := b.iterBelow(keyGroupStart(b.kgs.Start), keyGroupStart(b.kgs.End+1))
	if err != nil {
		return 0, err
	}
	defer func() {
		if err == nil {
			err = b.commitIfFull()
		}
	}()
	defer b.closeIter(it, &err)
	// The cursor is overwritten as the sweep moves on; start stays put.
	start := bytes.Clone(s.sweepCursor)
	wrapped := false
	valid := s.seek(it, start)
	for examined := 0; examined < s.spec.TTL.SweepBudget; {
		if !valid {
			if err := it.Error(); err != nil {
				return deleted, err
			}
			s.passEnded()
			if wrapped || start == nil {
				s.sweepMidRound = false
				break
			}
			wrapped, s.sweepMidRound = true, false
			valid = s.seek(it, nil)
			continue
		}
		k := it.Key()
		if wrapped && bytes.Compare(k, start) > 0 {
			break
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return deleted, err
		}
		e, cached := b.cache.lookup(k)
		if cached {
			v = e.val
		}
		if !cached || e.present {
			examined++
			if s.expiredAt(v, now) {
				if err := b.del(k); err != nil {
					return deleted, err
				}
				deleted++
			} else if len(v) >= ttlHeader {
				s.passLow = min(s.passLow, int64(binary.BigEndian.Uint64(v)))
			} else {
				// A value too short for its time: none can be assumed.
				s.passLow = math.MinInt64
			}
		}
		s.sweepCursor = append(s.sweepCursor[:0], k...)
		valid = s.settle(it, it.Next())
	}
	return deleted, nil
}

// passStarted and passEnded bracket a pass of the sweeper from the state's
// first key to past its last, which raises lowTime to what the state still
// holds. An entry written before the spill that preceded the pass was
// below the cache all through it, so the pass met it unless it was written
// again; the times of the later writes are in passLow, which starts from
// those written since that spill. So at the end of a pass, passLow bounds
// every entry left, except those a restore brought in between, which
// clears pass.
func (s *stateInfo) passStarted() {
	s.pass, s.passLow = true, s.sinceSpill
}

func (s *stateInfo) passEnded() {
	if s.pass {
		s.lowTime = s.passLow
	}
	s.pass = false
}

// seek positions it at the state's first key after the key after, or at its
// first key when after is nil.
func (s *stateInfo) seek(it *pebble.Iterator, after []byte) bool {
	if after == nil {
		s.passStarted()
		return s.settle(it, it.SeekGE(appendPrefix(nil, s.b.kgs.Start, s.id)))
	}
	// after+0x00 is the smallest key greater than after.
	return s.settle(it, it.SeekGE(append(bytes.Clone(after), 0)))
}

// settle moves it forward from where it stands (valid tells whether it
// stands on a key) to the first key of this state, skipping other states by
// seeking to this state's prefix in the same or the next key group.
func (s *stateInfo) settle(it *pebble.Iterator, valid bool) bool {
	for valid {
		k := it.Key()
		if len(k) < prefixLen {
			valid = it.Next()
			continue
		}
		kg, id := int(binary.BigEndian.Uint16(k)), binary.BigEndian.Uint16(k[2:])
		switch {
		case id == s.id:
			return true
		case id < s.id:
			valid = it.SeekGE(appendPrefix(nil, kg, s.id))
		case kg+1 > s.b.kgs.End:
			return false
		default:
			valid = it.SeekGE(appendPrefix(nil, kg+1, s.id))
		}
	}
	return false
}
