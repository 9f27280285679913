package snapshotfmt

import (
	"context"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// TestSourceEntries reads every state of the test savepoint through Source
// over a range of key groups and checks that it yields exactly the entries
// of the segments in that range, in order, each with its key group.
func TestSourceEntries(t *testing.T) {
	d := newMemDir()
	data := testData(300)
	writeSavepoint(t, d, testMeta(), data, Options{BlockSize: 512})
	r, err := Open(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var src savepoint.Source = r
	kgs := keygroup.Range{Start: 3, End: 11}
	for ref := range 5 {
		it := src.Entries(context.Background(), flatRef(r.meta, 0, ref), kgs)
		n := 0
		for _, sd := range data {
			if sd.ref != ref || !kgs.Contains(sd.kg) {
				continue
			}
			for i := range sd.entries {
				if !it.Next() {
					t.Fatalf("ref %d: iteration ended after %d entries: %v", ref, n, it.Err())
				}
				if e := it.Entry(); e.KeyGroup != sd.kg || !sameEntry(e, &sd.entries[i]) {
					t.Fatalf("ref %d entry %d: %+v in key group %d, want %+v in key group %d", ref, n, *e, e.KeyGroup, sd.entries[i], sd.kg)
				}
				n++
			}
		}
		if it.Next() || it.Err() != nil {
			t.Fatalf("ref %d: more than %d entries, or an error: %v", ref, n, it.Err())
		}
		it.Close()
	}
	for _, bad := range []savepoint.StateRef{{Operator: 2}, {Operator: -1}, {State: 4}, {State: 1, Timer: true}, {Operator: 1}} {
		it := src.Entries(context.Background(), bad, kgs)
		if it.Next() || it.Err() == nil {
			t.Errorf("%+v: want an error", bad)
		}
		if _, err := src.Segments(context.Background(), bad, kgs); err == nil {
			t.Errorf("Segments of %+v: want an error", bad)
		}
	}
}
