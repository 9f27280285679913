package flinkfmt

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// Spans covers every key group of the operator that holds entries, not
// only the first, each with its place in a file.
func TestSpansCoverEveryKeyGroup(t *testing.T) {
	dir := filepath.Join(fixtureRoot(t), "flink-tests/src/test/resources/new-stateful-udf-migration-itcase-flink1.19-rocksdb-savepoint")
	ctx := context.Background()
	r, err := Open(ctx, storage.LocalDir(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, op := range r.Metadata().Operators {
		k, err := r.Keyed(ctx, op)
		if err != nil || len(k.States) == 0 {
			continue
		}
		withEntries := map[int]bool{}
		for s := range k.States {
			it := k.Entries(ctx, s, keygroup.All(op.MaxParallelism))
			for it.Next() {
				withEntries[it.Entry().KeyGroup] = true
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			it.Close()
		}
		spans, err := k.Spans(ctx)
		if err != nil {
			t.Fatal(err)
		}
		spanned := map[int]bool{}
		for _, s := range spans {
			if s.File == "" || s.Length <= 0 {
				t.Errorf("%s: key group %d spans %q at %d, %d bytes", op.ID, s.KeyGroup, s.File, s.Offset, s.Length)
			}
			spanned[s.KeyGroup] = true
		}
		for kg := range withEntries {
			if !spanned[kg] {
				t.Errorf("%s: key group %d holds entries but has no span (%d spans)", op.ID, kg, len(spans))
			}
		}
		checked += len(withEntries)
	}
	if checked < 2 {
		t.Fatalf("%d key groups with entries checked; the fixture should have more", checked)
	}
	t.Logf("%d key groups with entries, each spanned", checked)
}
