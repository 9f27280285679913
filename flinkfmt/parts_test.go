package flinkfmt

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// TestStateReadsAfterAWholeWalk reads every state of every canonical
// fixture on its own before and after a walk of every state, which maps
// where each state's entries lie so that a read of one state reads only
// its bytes: the three must give the same entries.
func TestStateReadsAfterAWholeWalk(t *testing.T) {
	root, rows := inventory(t)
	ctx := context.Background()
	entry := func(e *Entry) string {
		return fmt.Sprintf("%d/%d/%x/%x/%x/%x/%d/%v", e.State, e.KeyGroup, e.Key, e.Namespace, e.MapKey, e.Value, e.Timestamp, e.Null)
	}
	read := func(k *Keyed, state int) ([]string, error) {
		var out []string
		it := k.Entries(ctx, state, keygroup.All(k.Operator.MaxParallelism))
		defer it.Close()
		for it.Next() {
			out = append(out, entry(it.Entry()))
		}
		return out, it.Err()
	}
	var ops, mapped, states, compressed, sized int
	for _, row := range rows {
		r, err := Open(ctx, storage.LocalDir(filepath.Join(root, row.dir)), Options{})
		if err != nil {
			continue
		}
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(ctx, op)
			if err != nil || k.Layouts[LayoutCanonical] == 0 || len(k.Layouts) != 1 {
				continue
			}
			before := make([][]string, len(k.States))
			failed := false
			for s := range k.States {
				if before[s], err = read(k, s); err != nil {
					failed = true
				}
			}
			all, err := read(k, -1)
			if err != nil || failed {
				continue
			}
			ops++
			if k.Compressed {
				compressed++
			}
			for _, sk := range k.subtasks {
				for i := range sk.handle.Offsets {
					if sk.knownParts(i) != nil {
						mapped++
					}
				}
			}
			for s := range k.States {
				after, err := read(k, s)
				if err != nil {
					t.Fatalf("%s: state %s after the walk: %v", row.dir, k.States[s].Name, err)
				}
				var want []string
				for _, e := range all {
					if prefix := fmt.Sprintf("%d/", s); len(e) > len(prefix) && e[:len(prefix)] == prefix {
						want = append(want, e)
					}
				}
				if !slices.Equal(before[s], want) || !slices.Equal(after, want) {
					t.Errorf("%s: state %s: %d entries alone, %d in the walk, %d alone after it", row.dir, k.States[s].Name, len(before[s]), len(want), len(after))
				}
				if m := k.States[s]; m.Kind != Timers {
					got, want := valueSizes(t, k, s, 7), valueSizes(t, k, s, 0)
					if !slices.Equal(got, want) {
						t.Errorf("%s: state %s: NextValueSizes gives %v, the entries %v", row.dir, m.Name, got, want)
					}
					sized += len(got)
				}
				states++
			}
		}
	}
	if ops == 0 || mapped == 0 || compressed == 0 || sized == 0 {
		t.Fatalf("%d operators (%d compressed), %d key groups mapped, %d values sized", ops, compressed, mapped, sized)
	}
	t.Logf("%d canonical operators (%d compressed), %d states, %d key groups mapped, %d values sized", ops, compressed, states, mapped, sized)
}

// valueSizes gives the stored sizes of a state's values from
// NextValueSizes in batches of batch, or from its entries when batch is 0.
func valueSizes(t *testing.T, k *Keyed, state, batch int) []int {
	t.Helper()
	it := k.Entries(context.Background(), state, keygroup.All(k.Operator.MaxParallelism))
	defer it.Close()
	var out []int
	if batch == 0 {
		for it.Next() {
			e := it.Entry()
			switch {
			case k.States[state].Kind != Map:
				out = append(out, len(e.Value))
			case e.Null:
				out = append(out, 1)
			default:
				out = append(out, 1+len(e.Value))
			}
		}
	} else {
		buf := make([]int, batch)
		for {
			n := it.NextValueSizes(buf)
			out = append(out, buf[:n]...)
			if n < batch {
				break
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
