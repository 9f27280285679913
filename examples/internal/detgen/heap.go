package detgen

// Heap is a binary min-heap ordered by less. The generators keep one per
// split (pending completions, or the next click of every user), so it is
// written for values, without container/heap's interface boxing.
type Heap[T any] struct {
	items []T
	less  func(a, b T) bool
}

// NewHeap returns an empty heap with room for n items.
func NewHeap[T any](n int, less func(a, b T) bool) *Heap[T] {
	return &Heap[T]{items: make([]T, 0, n), less: less}
}

// Len is the number of items.
func (h *Heap[T]) Len() int { return len(h.items) }

// Min returns the smallest item; the heap must not be empty.
func (h *Heap[T]) Min() T { return h.items[0] }

// Push adds v.
func (h *Heap[T]) Push(v T) {
	h.items = append(h.items, v)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

// Pop removes and returns the smallest item; the heap must not be empty.
func (h *Heap[T]) Pop() T {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	h.down(0)
	return top
}

// ReplaceMin replaces the smallest item with v: one sift instead of a Pop
// and a Push, for a user whose next click goes back into the heap.
func (h *Heap[T]) ReplaceMin(v T) {
	h.items[0] = v
	h.down(0)
}

func (h *Heap[T]) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			m = r
		}
		if !h.less(h.items[m], h.items[i]) {
			return
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
}
