package inspect

import (
	"bytes"
	"cmp"
	"container/heap"
	"slices"

	"github.com/stateproc/stateproc/savepoint"
)

// hotKey is one key of one keyed state with what it holds there.
type hotKey struct {
	ref     savepoint.StateRef
	key     []byte
	entries uint64
	// bytes sums the map keys and values of the key's entries, without
	// framing: what the key costs beyond its own name.
	bytes uint64
}

// topKeys keeps the n heaviest keys by one weight in a min-heap, so memory
// is bounded by n however many keys stream past. Ties are broken by
// (operator, state, key bytes) so that parallel scans give the same answer.
type topKeys struct {
	n int
	// byBytes weighs keys by bytes rather than entries. It is a flag, not
	// a function, so that offer's argument stays on the stack.
	byBytes bool
	h       []hotKey
}

// Weights of newTopKeys.
const (
	byEntries = false
	byBytes   = true
)

func newTopKeys(n int, weighBytes bool) *topKeys {
	return &topKeys{n: n, byBytes: weighBytes}
}

func (t *topKeys) weight(k *hotKey) uint64 {
	if t.byBytes {
		return k.bytes
	}
	return k.entries
}

// better orders a before b when a is heavier.
func (t *topKeys) better(a, b *hotKey) bool {
	if wa, wb := t.weight(a), t.weight(b); wa != wb {
		return wa > wb
	}
	return cmp.Or(a.ref.Compare(b.ref), bytes.Compare(a.key, b.key)) < 0
}

// offer considers k. The key bytes are copied only when k is kept, so the
// caller may pass bytes it reuses.
func (t *topKeys) offer(k hotKey) {
	if t.n <= 0 {
		return
	}
	if len(t.h) == t.n {
		if !t.better(&k, &t.h[0]) {
			return
		}
		k.key = append(t.h[0].key[:0], k.key...)
		t.h[0] = k
		heap.Fix((*keyHeap)(t), 0)
		return
	}
	k.key = bytes.Clone(k.key)
	heap.Push((*keyHeap)(t), k)
}

func (t *topKeys) merge(o *topKeys) {
	for _, k := range o.h {
		t.offer(k)
	}
}

// sorted returns the keys kept, heaviest first.
func (t *topKeys) sorted() []hotKey {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b hotKey) int {
		if t.better(&a, &b) {
			return -1
		}
		if t.better(&b, &a) {
			return 1
		}
		return 0
	})
	return out
}

// keyHeap is topKeys seen by container/heap: the lightest key on top.
type keyHeap topKeys

func (h *keyHeap) Len() int           { return len(h.h) }
func (h *keyHeap) Less(i, j int) bool { return (*topKeys)(h).better(&h.h[j], &h.h[i]) }
func (h *keyHeap) Swap(i, j int)      { h.h[i], h.h[j] = h.h[j], h.h[i] }
func (h *keyHeap) Push(x any)         { h.h = append(h.h, x.(hotKey)) }
func (h *keyHeap) Pop() any {
	k := h.h[len(h.h)-1]
	h.h = h.h[:len(h.h)-1]
	return k
}
