package pebblebackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// checkpointSource reads one operator's native checkpoints as a
// savepoint.Source, as the engine does.
type checkpointSource struct {
	meta *savepoint.Metadata
	set  CheckpointSet
}

func (s checkpointSource) Layout() savepoint.Layout {
	return savepoint.Layout{Name: "native checkpoints"}
}

func (s checkpointSource) Metadata() *savepoint.Metadata { return s.meta }

func (s checkpointSource) Segments(context.Context, savepoint.StateRef, keygroup.Range) ([]savepoint.Segment, error) {
	return nil, errors.New("native checkpoints have no index")
}

func (s checkpointSource) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	if err := s.meta.Check(ref); err != nil {
		return savepoint.Failed(err)
	}
	return s.set.Entries(ctx, s.meta.RefName(ref), kgs)
}

func (s checkpointSource) Close() error { return nil }

func checkpointOf(t testing.TB, meta *savepoint.Metadata, subtasks []state.Backend) savepoint.Source {
	t.Helper()
	dir := t.TempDir()
	var readers []*CheckpointReader
	for i, b := range subtasks {
		cp, err := b.(*Backend).Checkpoint(filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		r, err := OpenCheckpoint(cp.Dir, cp.Keyspace)
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, r)
	}
	set, err := NewCheckpointSet(readers...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return checkpointSource{meta: meta, set: set}
}

func TestCheckpointHoldsWhatASavepointHolds(t *testing.T) {
	statetest.RunCheckpoint(t, pebbleFactory, checkpointOf, map[string]statetest.Factory{"Heap": heapFactory, "Pebble": pebbleFactory})
}

// TestCheckpointSharesImmutableFiles checks what incremental checkpoints
// rely on: a second checkpoint after a small change holds the first one's
// sstables under the same names, as links to the same files, and adds only
// the few that the change wrote.
func TestCheckpointSharesImmutableFiles(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	v, err := state.GetValue(b, nil, state.NewValue("v", serializers.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	// Values that do not compress, so that the first checkpoint's sstables
	// are large against the few kilobytes any new sstable takes.
	rnd := rand.New(rand.NewPCG(1, 2))
	put := func(from, to int) {
		for i := from; i < to; i++ {
			setKey(t, b, fmt.Sprintf("key-%06d", i))
			value := make([]byte, 48)
			for j := range value {
				value[j] = byte(rnd.Uint32())
			}
			if err := v.Update(value); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 20000)
	// Settle the tree into its bottom level first: otherwise the files the
	// first checkpoint captures may be compacted away before the second,
	// and then nothing is shared for a reason that is not under test. A
	// lone new level-0 file is not compacted.
	if err := b.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.db.Compact(context.Background(), []byte{0}, bytes.Repeat([]byte{0xff}, 16), false); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first, err := b.Checkpoint(filepath.Join(dir, "1"))
	if err != nil {
		t.Fatal(err)
	}
	put(0, 100)
	second, err := b.Checkpoint(filepath.Join(dir, "2"))
	if err != nil {
		t.Fatal(err)
	}
	if first.DB != second.DB || first.DB == "" {
		t.Fatalf("database ids %q and %q, want one non-empty id", first.DB, second.DB)
	}
	inFirst := map[string]CheckpointFile{}
	for _, f := range first.Files {
		if f.Immutable {
			inFirst[f.Name] = f
		}
	}
	var shared, added int64
	for _, f := range second.Files {
		if !f.Immutable {
			continue
		}
		old, ok := inFirst[f.Name]
		if !ok {
			added += f.Size
			continue
		}
		a, err := os.Stat(filepath.Join(first.Dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.Stat(filepath.Join(second.Dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if old.Size != f.Size || !os.SameFile(a, b) {
			t.Fatalf("%s differs between the checkpoints", f.Name)
		}
		shared += f.Size
	}
	if shared == 0 || added == 0 || added*10 > shared {
		t.Fatalf("the second checkpoint shares %d bytes of sstables with the first and adds %d; want most shared and some added", shared, added)
	}
}
