package flinksource

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The set counts each distinct key once whatever their order: ascending
// (RocksDB's), then out of order (the heap's), with repeats, across a
// reset and with keys that are prefixes of others or empty.
func TestKeySetCountsDistinctKeys(t *testing.T) {
	s := newKeySet()
	rng := rand.New(rand.NewPCG(1, 2))
	for round, c := range []struct {
		name   string
		keys   []string
		sorted bool
	}{
		{"ascending", []string{"", "a", "ab", "abc", "b", "ba"}, true},
		{"out of order", []string{"b", "a", "b", "ab", "", "a", "", "ba"}, false},
		{"ascending then a repeat", []string{"k1", "k2", "k3", "k2", "k4", "k1"}, false},
	} {
		keys := c.keys
		// Many more keys than the table's first 16 slots, ascending or
		// shuffled, each added once or twice.
		var many []string
		for i := range 5000 {
			many = append(many, fmt.Sprintf("user-%06d", i))
		}
		if !c.sorted {
			rng.Shuffle(len(many), func(i, j int) { many[i], many[j] = many[j], many[i] })
			many = append(many, many[:100]...)
		}
		keys = append(keys, many...)
		s.reset()
		want := map[string]bool{}
		for _, k := range keys {
			s.add([]byte(k))
			want[k] = true
			if s.n != uint64(len(want)) {
				t.Fatalf("round %d (%s): after %q, %d keys, want %d", round, c.name, k, s.n, len(want))
			}
		}
		if s.unsorted == c.sorted {
			t.Errorf("%s: unsorted %v", c.name, s.unsorted)
		}
	}
}
