package pebblebackend

import (
	"math"
	"slices"
)

// Timer writes wait in a timer service's own cache before they reach the
// write batch, as state writes wait in the write cache. Most timers live
// briefly: a request's deadline is deleted when the request completes, an
// event-time timer fires soon after it is registered. A timer whose key is
// known to be nowhere below the cache, registered and then deleted or fired
// while its write waits, never reaches Pebble, which would otherwise keep
// both the key and its deletion tombstone in the memtable, where every
// later seek steps over them.
//
// A key group's timer keys are known to be absent below when their time is
// after the latest time of a timer the service ever set below in that key
// group (maxBelow): event-time timers mostly come in ascending time, so
// that holds for most of them. The waiting writes of a key group are
// spilled before the service reads that key group below the cache
// (reload), all of them when they reach timerPendMax, and before every
// commit that a snapshot, checkpoint or restore needs (commitWrites).
// Nothing else reads timer keys; the service's in-memory heads see every
// write as it happens.

// timerWrite is a waiting write of one timer: a registration when present,
// a deletion otherwise; absentBelow says that the key is nowhere below.
type timerWrite struct{ present, absentBelow bool }

// timerPendMax bounds the waiting timer writes of one service.
const timerPendMax = 8192

// write records a registration (present) or deletion of the timer with key
// suffix s (time, key, namespace) in the key group at offset at.
func (t *timerService) write(at int, s []byte, present bool) error {
	m := t.pend[at]
	e, ok := m[string(s)]
	if !ok {
		e.absentBelow = readTime(s) > t.maxBelow[at]
	}
	if !present && e.absentBelow {
		// Nothing below holds it: the deletion needs no write at all.
		if ok {
			delete(m, string(s))
			t.pendN--
		}
		return nil
	}
	e.present = present
	if !ok {
		if m == nil {
			m = make(map[string]timerWrite)
			t.pend[at] = m
		}
		if !t.dirty[at] {
			t.dirty[at] = true
			t.dirtyKGs = append(t.dirtyKGs, at)
		}
		t.pendN++
	}
	m[string(s)] = e
	if t.pendN >= timerPendMax {
		return t.spillPending()
	}
	return nil
}

// spillKG moves the waiting writes of the key group at offset at into the
// write batch, committing it whenever it is full and no iterator is open.
func (t *timerService) spillKG(at int) error {
	m := t.pend[at]
	if len(m) == 0 {
		return nil
	}
	b := t.b
	// In key order, the batch's and then the memtable's skiplist inserts
	// each start where the one before ended, in memory still cached.
	t.spillOrder = t.spillOrder[:0]
	for s := range m {
		t.spillOrder = append(t.spillOrder, s)
	}
	slices.Sort(t.spillOrder)
	for _, s := range t.spillOrder {
		e := m[s]
		b.spillKey = append(appendPrefix(b.spillKey[:0], b.kgs.Start+at, t.id), s...)
		var err error
		switch {
		case e.present:
			t.maxBelow[at] = max(t.maxBelow[at], readTime([]byte(s)))
			err = b.wb.Set(b.spillKey, nil, nil)
		case !e.absentBelow:
			err = b.wb.Delete(b.spillKey, nil)
		}
		if err == nil && b.full() && b.openIters == 0 {
			err = b.commitBatch()
		}
		if err != nil {
			return err
		}
	}
	t.pendN -= len(m)
	// A map that held many is made anew, see spill.
	if len(m) > spillReuseMax {
		t.pend[at] = nil
	} else {
		clear(m)
	}
	return nil
}

// spillPending moves every waiting write of the service into the write
// batch.
func (t *timerService) spillPending() error {
	for _, at := range t.dirtyKGs {
		if err := t.spillKG(at); err != nil {
			return err
		}
		t.dirty[at] = false
	}
	t.dirtyKGs = t.dirtyKGs[:0]
	return nil
}

// spillTimers moves the waiting timer writes of every service into the
// write batch.
func (b *Backend) spillTimers() error {
	for _, t := range b.timers {
		if err := t.spillPending(); err != nil {
			return err
		}
	}
	return nil
}

// newTimerCache sizes the service's timer cache for its key groups, none of
// which holds a timer below yet.
func (t *timerService) newTimerCache(n int) {
	t.pend = make([]map[string]timerWrite, n)
	t.dirty = make([]bool, n)
	t.maxBelow = slices.Repeat([]int64{math.MinInt64}, n)
}
