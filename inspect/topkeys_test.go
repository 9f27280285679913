package inspect

import (
	"fmt"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
)

func TestTopKeys(t *testing.T) {
	// Keys k0..k9 with entries 0..9 and bytes 90, 81, ..., 0 (10*(9-i)).
	byE, byB := newTopKeys(3, byEntries), newTopKeys(3, byBytes)
	buf := []byte{}
	for i := range 10 {
		// The caller reuses its buffer: offer must copy what it keeps.
		buf = fmt.Appendf(buf[:0], "k%d", i)
		k := hotKey{key: buf, entries: uint64(i), bytes: uint64(10 * (9 - i))}
		byE.offer(k)
		byB.offer(k)
	}
	check := func(name string, got []hotKey, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d keys, want %d", name, len(got), len(want))
		}
		for i := range want {
			if string(got[i].key) != want[i] {
				t.Errorf("%s[%d] = %s, want %s", name, i, got[i].key, want[i])
			}
		}
	}
	check("by entries", byE.sorted(), "k9", "k8", "k7")
	check("by bytes", byB.sorted(), "k0", "k1", "k2")
}

func TestTopKeysTiesAndMerge(t *testing.T) {
	// Equal weights are ordered by operator, state, then key bytes, so two
	// workers' heaps merge to the same answer in any order.
	a, b := newTopKeys(2, byEntries), newTopKeys(2, byEntries)
	a.offer(hotKey{ref: savepoint.StateRef{Operator: 1}, key: []byte("x"), entries: 5})
	a.offer(hotKey{ref: savepoint.StateRef{Operator: 0}, key: []byte("z"), entries: 5})
	b.offer(hotKey{ref: savepoint.StateRef{Operator: 0}, key: []byte("y"), entries: 5})
	b.offer(hotKey{ref: savepoint.StateRef{Operator: 0}, key: []byte("w"), entries: 1})
	a.merge(b)
	got := a.sorted()
	if len(got) != 2 || string(got[0].key) != "y" || string(got[1].key) != "z" {
		t.Errorf("got %q %q, want y z", got[0].key, got[1].key)
	}
	none := newTopKeys(0, byEntries)
	none.offer(hotKey{key: []byte("a"), entries: 1})
	if len(none.sorted()) != 0 {
		t.Error("a heap of 0 kept a key")
	}
}
