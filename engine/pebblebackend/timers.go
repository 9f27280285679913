package pebblebackend

import (
	"bytes"
	"container/heap"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
)

// timerService stores each timer as the empty-valued Pebble key
// [kg][id][u64 time, sign bit flipped][key][namespace]: a (key, namespace,
// time) is stored at most once, and a key group's timers sort in firing
// order.
//
// As Flink's key-group-partitioned priority queue, it keeps in memory only
// the first timers of each key group and a heap of key groups ordered by
// the first, so that Earliest is O(1) and Pop reads one key group, never all
// of them. Up to headsCap timers per key group are kept, read with one seek:
// a seek costs more than the timer it finds, and most pops then read
// nothing.
type timerService struct {
	b    *Backend
	id   uint16
	name string
	ns   serializers.Serializer

	// heads[kg-Start] holds the first timers of key group kg in order, as
	// the key suffixes after [kg][id], whose bytes order as (time, key,
	// namespace): every timer of kg that sorts before the last one held is
	// held too. Empty exactly when kg has no timers.
	heads [][][]byte
	// complete[kg-Start] says that heads holds every timer of kg, so that
	// removing the last one held needs no seek to find that none is left:
	// most key groups hold a few timers at a time.
	complete []bool
	// queue holds the key groups with timers, earliest head first.
	queue kgQueue

	// pend[kg-Start] holds kg's timer writes that have not reached the
	// write batch, by key suffix, and dirty and dirtyKGs the key groups
	// with some; pendN counts them all. maxBelow[kg-Start] is the latest
	// time of a timer of kg ever set below the cache. See timercache.go.
	pend     []map[string]timerWrite
	dirty    []bool
	dirtyKGs []int
	pendN    int
	maxBelow []int64
	// spillOrder is spillKG's scratch.
	spillOrder []string
}

var _ state.Timers = (*timerService)(nil)

func newTimerService(b *Backend, id uint16, name string, ns serializers.Serializer) *timerService {
	n := b.kgs.Len()
	t := &timerService{b: b, id: id, name: name, ns: ns, heads: make([][][]byte, n), complete: make([]bool, n)}
	t.newTimerCache(n)
	t.queue = kgQueue{t: t, pos: make([]int, n)}
	for i := range t.queue.pos {
		t.queue.pos[i] = -1
	}
	return t
}

// timerKey builds [kg][id][time][key][namespace] for the current key in the
// backend's key scratch; the suffix after [kg][id] is key[prefixLen:].
func (t *timerService) timerKey(ns []byte, ts int64) ([]byte, error) {
	b := t.b
	if err := b.checkKey(); err != nil {
		return nil, err
	}
	k := appendPrefix(b.kbuf[:0], b.kg, t.id)
	k = appendTime(k, ts)
	k = append(k, b.keyEsc...)
	b.kbuf = appendEscaped(k, ns)
	return b.kbuf, nil
}

func (t *timerService) Register(ns []byte, ts int64) error {
	k, err := t.timerKey(ns, ts)
	if err != nil {
		return err
	}
	kg := t.b.kg
	at := kg - t.b.kgs.Start
	hs, s := t.heads[at], k[prefixLen:]
	if err := t.write(at, s, true); err != nil {
		return err
	}
	i, found := slices.BinarySearchFunc(hs, s, bytes.Compare)
	switch {
	case found:
	case len(hs) == 0:
		// kg had no timers: s is its only one.
		t.complete[at] = true
		t.setHeads(kg, append(hs, bytes.Clone(s)))
	case i < len(hs) || t.complete[at] && len(hs) < headsCap:
		hs = slices.Insert(hs, i, bytes.Clone(s))
		if len(hs) > headsCap {
			hs = hs[:headsCap]
			t.complete[at] = false
		}
		t.setHeads(kg, hs)
	default:
		// After the last held timer, s need not be held, but then the
		// held ones are no longer all.
		t.complete[at] = false
	}
	return t.b.commitIfFull()
}

// headsCap is how many of a key group's first timers are kept in memory.
const headsCap = 16

func (t *timerService) Delete(ns []byte, ts int64) error {
	k, err := t.timerKey(ns, ts)
	if err != nil {
		return err
	}
	if err := t.write(t.b.kg-t.b.kgs.Start, k[prefixLen:], false); err != nil {
		return err
	}
	if err := t.removed(t.b.kg, k); err != nil {
		return err
	}
	return t.b.commitIfFull()
}

// removed drops the deleted timer with full key k from kg's held timers,
// reading more from the database when none is left.
func (t *timerService) removed(kg int, k []byte) error {
	hs := t.heads[kg-t.b.kgs.Start]
	i, found := slices.BinarySearchFunc(hs, k[prefixLen:], bytes.Compare)
	if !found {
		return nil
	}
	if len(hs) == 1 {
		if t.complete[kg-t.b.kgs.Start] {
			t.setHeads(kg, nil)
			return nil
		}
		return t.reload(kg, k)
	}
	t.setHeads(kg, slices.Delete(hs, i, i+1))
	return nil
}

func (t *timerService) Earliest() (int64, bool, error) {
	if err := t.b.check(); err != nil {
		return 0, false, err
	}
	if t.queue.Len() == 0 {
		return 0, false, nil
	}
	return readTime(t.heads[t.queue.kgs[0]-t.b.kgs.Start][0]), true, nil
}

func (t *timerService) Pop(upTo int64) (state.Timer, bool, error) {
	if err := t.b.check(); err != nil {
		return state.Timer{}, false, err
	}
	if t.queue.Len() == 0 {
		return state.Timer{}, false, nil
	}
	kg := t.queue.kgs[0]
	head := t.heads[kg-t.b.kgs.Start][0]
	timer, err := parseTimer(head)
	if err != nil {
		return state.Timer{}, false, fmt.Errorf("pebblebackend: timer service %q: %w", t.name, err)
	}
	if timer.Timestamp > upTo {
		return state.Timer{}, false, nil
	}
	k := append(appendPrefix(t.b.kbuf[:0], kg, t.id), head...)
	t.b.kbuf = k
	if err := t.write(kg-t.b.kgs.Start, head, false); err != nil {
		return state.Timer{}, false, err
	}
	if err := t.removed(kg, k); err != nil {
		return state.Timer{}, false, err
	}
	return timer, true, t.b.commitIfFull()
}

// parseTimer splits the suffix [time][key][namespace] of a timer key into
// fresh slices.
func parseTimer(suffix []byte) (state.Timer, error) {
	if len(suffix) < 8 {
		return state.Timer{}, fmt.Errorf("%w: timer key of %d bytes", errKey, len(suffix))
	}
	tm := state.Timer{Timestamp: readTime(suffix)}
	key, rest, err := readEscaped(nil, suffix[8:])
	if err != nil {
		return tm, err
	}
	ns, rest, err := readEscaped([]byte{}, rest)
	if err != nil {
		return tm, err
	}
	if len(rest) != 0 {
		return tm, fmt.Errorf("%w: %d bytes after a timer's namespace", errKey, len(rest))
	}
	if key == nil {
		key = []byte{}
	}
	tm.Key, tm.Namespace = key, ns
	return tm, nil
}

// reload reads key group kg's first timers from the database after the
// last one held, whose full key is removed, was deleted. Every other timer
// of kg sorts after it, so the search starts there: from the start of kg it
// would step again over the deletion tombstones of every timer that fired
// or was deleted before, which the memtable keeps until it is flushed.
func (t *timerService) reload(kg int, removed []byte) (err error) {
	if err := t.spillKG(kg - t.b.kgs.Start); err != nil {
		return err
	}
	p := appendPrefix(nil, kg, t.id)
	it, err := t.b.iterBelow(bytes.Clone(removed), prefixEnd(p))
	if err != nil {
		return err
	}
	defer t.b.closeIter(it, &err)
	return t.loadHead(it, kg)
}

// reloadAll reads the first timers of every owned key group, and the time
// of its last, after a restore, with one iterator.
func (t *timerService) reloadAll() (err error) {
	it, err := t.b.iterBelow(keyGroupStart(t.b.kgs.Start), keyGroupStart(t.b.kgs.End+1))
	if err != nil {
		return err
	}
	defer t.b.closeIter(it, &err)
	for kg := t.b.kgs.Start; kg <= t.b.kgs.End; kg++ {
		if err := t.loadHead(it, kg); err != nil {
			return err
		}
		at := kg - t.b.kgs.Start
		if hs := t.heads[at]; t.complete[at] {
			if len(hs) > 0 {
				t.maxBelow[at] = max(t.maxBelow[at], readTime(hs[len(hs)-1]))
			}
			continue
		}
		p := appendPrefix(nil, kg, t.id)
		if it.SeekLT(prefixEnd(p)) && bytes.HasPrefix(it.Key(), p) {
			t.maxBelow[at] = max(t.maxBelow[at], readTime(it.Key()[prefixLen:]))
		}
		if err := it.Error(); err != nil {
			return err
		}
	}
	return nil
}

func (t *timerService) loadHead(it *pebble.Iterator, kg int) error {
	p := appendPrefix(nil, kg, t.id)
	hs := t.heads[kg-t.b.kgs.Start][:0]
	for ok := it.SeekGE(p); ok && len(hs) < headsCap && bytes.HasPrefix(it.Key(), p); ok = it.Next() {
		hs = append(hs, bytes.Clone(it.Key()[prefixLen:]))
	}
	if err := it.Error(); err != nil {
		return err
	}
	// Fewer than headsCap means the key group's timers ran out first.
	t.complete[kg-t.b.kgs.Start] = len(hs) < headsCap
	t.setHeads(kg, hs)
	return nil
}

// setHeads records kg's first timers (none when it has none) and
// repositions kg in the queue.
func (t *timerService) setHeads(kg int, hs [][]byte) {
	i := kg - t.b.kgs.Start
	t.heads[i] = hs
	q := &t.queue
	switch at := q.pos[i]; {
	case len(hs) == 0 && at >= 0:
		heap.Remove(q, at)
	case len(hs) == 0:
	case at >= 0:
		heap.Fix(q, at)
	default:
		heap.Push(q, kg)
	}
}

// kgQueue is a min-heap of key groups ordered by their first timer.
type kgQueue struct {
	t   *timerService
	kgs []int
	// pos[kg-Start] is kg's index in kgs, -1 when absent.
	pos []int
}

func (q *kgQueue) Len() int { return len(q.kgs) }

func (q *kgQueue) Less(i, j int) bool {
	start := q.t.b.kgs.Start
	c := bytes.Compare(q.t.heads[q.kgs[i]-start][0], q.t.heads[q.kgs[j]-start][0])
	return c < 0 || (c == 0 && q.kgs[i] < q.kgs[j])
}

func (q *kgQueue) Swap(i, j int) {
	q.kgs[i], q.kgs[j] = q.kgs[j], q.kgs[i]
	start := q.t.b.kgs.Start
	q.pos[q.kgs[i]-start] = i
	q.pos[q.kgs[j]-start] = j
}

func (q *kgQueue) Push(x any) {
	kg := x.(int)
	q.pos[kg-q.t.b.kgs.Start] = len(q.kgs)
	q.kgs = append(q.kgs, kg)
}

func (q *kgQueue) Pop() any {
	n := len(q.kgs) - 1
	kg := q.kgs[n]
	q.kgs = q.kgs[:n]
	q.pos[kg-q.t.b.kgs.Start] = -1
	return kg
}
