package heapbackend

import (
	"container/heap"
	"slices"
	"strings"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
)

// timerService keeps its timers twice: in a set per key group, which makes
// registration idempotent and snapshots per key group cheap, and in one
// binary heap over all owned key groups, which gives the earliest timer.
// Each timer knows its heap position, so a delete is a set lookup plus
// O(log n) in the heap.
type timerService struct {
	b      *Backend
	name   string
	ns     serializers.Serializer
	groups []map[string]*timer
	queue  timerQueue
	id     []byte // scratch
	order  []*timer
}

// timer's id sorts by (time, key, namespace): see ident.go.
type timer struct {
	id  string
	ts  int64
	gi  int
	idx int // position in the queue
}

var _ state.Timers = (*timerService)(nil)

func newTimerService(b *Backend, name string, ns serializers.Serializer) *timerService {
	return &timerService{b: b, name: name, ns: ns, groups: make([]map[string]*timer, b.kgs.Len())}
}

// timerID builds the identifier of (ts, key, ns) in t.id.
func (t *timerService) timerID(ts int64, key, ns []byte) []byte {
	t.id = append(appendKey(appendTime(t.id[:0], ts), key), ns...)
	return t.id
}

func (t *timerService) check() error {
	switch {
	case t.b.closed:
		return errClosed
	case t.b.gi < 0:
		return errNoKey
	}
	return nil
}

func (t *timerService) Register(ns []byte, ts int64) error {
	if err := t.check(); err != nil {
		return err
	}
	t.insert(t.b.gi, ts, t.b.key, ns)
	return nil
}

// insert adds a timer unless it exists.
func (t *timerService) insert(gi int, ts int64, key, ns []byte) {
	id := t.timerID(ts, key, ns)
	set := t.groups[gi]
	if _, ok := set[string(id)]; ok {
		return
	}
	if set == nil {
		set = make(map[string]*timer)
		t.groups[gi] = set
	}
	tm := &timer{id: string(id), ts: ts, gi: gi}
	set[tm.id] = tm
	heap.Push(&t.queue, tm)
}

func (t *timerService) Delete(ns []byte, ts int64) error {
	if err := t.check(); err != nil {
		return err
	}
	set := t.groups[t.b.gi]
	if tm, ok := set[string(t.timerID(ts, t.b.key, ns))]; ok {
		delete(set, tm.id)
		heap.Remove(&t.queue, tm.idx)
	}
	return nil
}

func (t *timerService) Earliest() (int64, bool, error) {
	if t.b.closed {
		return 0, false, errClosed
	}
	if len(t.queue) == 0 {
		return 0, false, nil
	}
	return t.queue[0].ts, true, nil
}

func (t *timerService) Pop(upTo int64) (state.Timer, bool, error) {
	if t.b.closed {
		return state.Timer{}, false, errClosed
	}
	if len(t.queue) == 0 || t.queue[0].ts > upTo {
		return state.Timer{}, false, nil
	}
	tm := heap.Pop(&t.queue).(*timer)
	delete(t.groups[tm.gi], tm.id)
	key, ns := splitID(tm.id[8:], nil)
	return state.Timer{Timestamp: tm.ts, Key: key, Namespace: []byte(ns)}, true, nil
}

// sorted returns the timers of group gi in (time, key, namespace) order. The
// slice is reused by the next call.
func (t *timerService) sorted(gi int) []*timer {
	t.order = t.order[:0]
	for _, tm := range t.groups[gi] {
		t.order = append(t.order, tm)
	}
	slices.SortFunc(t.order, func(a, b *timer) int { return strings.Compare(a.id, b.id) })
	return t.order
}

func (t *timerService) drop() { t.groups, t.queue, t.order = nil, nil, nil }

// timerQueue is a container/heap of timers ordered by identifier.
type timerQueue []*timer

func (q timerQueue) Len() int           { return len(q) }
func (q timerQueue) Less(i, j int) bool { return q[i].id < q[j].id }
func (q timerQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}

func (q *timerQueue) Push(x any) {
	tm := x.(*timer)
	tm.idx = len(*q)
	*q = append(*q, tm)
}

func (q *timerQueue) Pop() any {
	old := *q
	tm := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return tm
}
