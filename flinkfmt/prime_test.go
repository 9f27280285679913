package flinkfmt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// Priming an iteration changes none of what it gives: over every keyed
// state of every Flink savepoint and checkpoint of ../shared/flink-savepoints
// (canonical, heap and native RocksDB handles), a key group's entries read
// after Prime are those read without it, in the same order, and a second
// Prime, or one after the first entry, does nothing.
func TestPrimeIsNext(t *testing.T) {
	root, rows := inventory(t)
	ctx := context.Background()
	states, groups := 0, 0
	for _, row := range rows {
		dir := filepath.Join(root, row.dir)
		r, err := Open(ctx, storage.LocalDir(dir), Options{})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(ctx, op)
			if err != nil {
				if !errors.Is(err, ErrNotKeyed) && !errors.Is(err, ErrUnsupported) {
					t.Errorf("%s: %v", dir, err)
				}
				continue
			}
			for state := range k.States {
				states++
				for kg := range op.MaxParallelism {
					kgs := keygroup.Range{Start: kg, End: kg + 1}
					want, werr := primedEntries(k.Entries(ctx, state, kgs), 0)
					got, gerr := primedEntries(k.Entries(ctx, state, kgs), 2)
					if fmt.Sprint(werr) != fmt.Sprint(gerr) {
						t.Fatalf("%s, state %d, key group %d: error %v primed, %v not", dir, state, kg, gerr, werr)
					}
					if len(got) != len(want) {
						t.Fatalf("%s, state %d, key group %d: %d entries primed, %d not", dir, state, kg, len(got), len(want))
					}
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s, state %d, key group %d, entry %d: %s primed, %s not", dir, state, kg, i, got[i], want[i])
						}
					}
					if len(want) > 0 {
						groups++
					}
				}
			}
		}
	}
	if groups == 0 {
		t.Fatal("no key group with entries")
	}
	t.Logf("%d states, %d key groups with entries", states, groups)
}

// primedEntries primes it primes times, then reads it to its end, priming
// it once more after its first entry, and closes it.
func primedEntries(it *EntryIterator, primes int) ([]string, error) {
	defer it.Close()
	for range primes {
		it.Prime()
	}
	var out []string
	for it.Next() {
		e := it.Entry()
		out = append(out, fmt.Sprintf("%d/%d %x %x %x %x %v %d", e.KeyGroup, e.State, e.Key, e.Namespace, e.MapKey, e.Value, e.Null, e.Timestamp))
		if primes > 0 && len(out) == 1 {
			it.Prime()
		}
	}
	return out, it.Err()
}
