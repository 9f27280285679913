package statetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// CheckpointFunc checkpoints subtasks, the backends of the operator that
// meta describes, in a layout of its own and returns the checkpoint opened.
// It is called more than once on the same backends, as a running job takes
// one checkpoint after another.
type CheckpointFunc func(t testing.TB, meta *savepoint.Metadata, subtasks []state.Backend) savepoint.Source

// RunCheckpoint checks a checkpoint layout against the canonical savepoint:
// checkpoints of backends that newBackend makes hold the entries that
// savepoints of the same state hold, before and after the state changes,
// and restore at other parallelisms into backends that each factory of
// restoreInto makes.
func RunCheckpoint(t *testing.T, newBackend Factory, checkpoint CheckpointFunc, restoreInto map[string]Factory) {
	const keys = 1500
	j := newJob()
	clock := state.NewManualClock(t0)
	src := subtasks(t, newBackend, j, 2, maxP, clock)
	for i := range keys {
		key := userKey(i)
		src[owner(key, 2, maxP)].write(i, key, false)
	}
	now := t0 + 1000
	clock.Set(now)
	meta := NewMetadata(j.operator(2, maxP, serializers.String()), now)
	sameAsSavepoint(t, meta, now, src, checkpoint)

	// A change after the first checkpoint: cleared keys must be gone from
	// the next one, rewritten keys there with their new contents.
	for i := 0; i < keys; i += 3 {
		key := userKey(i)
		src[owner(key, 2, maxP)].clear(i, key)
	}
	for i := keys; i < keys+200; i++ {
		key := userKey(i)
		src[owner(key, 2, maxP)].write(i, key, false)
	}
	chk, want := sameAsSavepoint(t, meta, now, src, checkpoint)

	for name, newDst := range restoreInto {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("RestoreInto%s/Parallelism%d", name, p), func(t *testing.T) {
				dst := subtasks(t, newDst, j, p, maxP, clock)
				for _, s := range dst {
					Restore(t, s.f.b, chk, state.RestoreOptions{Now: now})
				}
				for i := range keys + 200 {
					if i < keys && i%3 == 0 {
						continue
					}
					key := userKey(i)
					dst[owner(key, p, maxP)].check(i, key)
				}
				again := WriteSavepoint(t, tempDir(t, "again"), NewMetadata(j.operator(p, maxP, serializers.String()), now), now, backends(dst)...)
				SameDump(t, Dump(t, again, 0), want)
			})
		}
	}
}

// sameAsSavepoint takes a savepoint and a checkpoint of src and checks
// that they hold the same entries, as a whole and in a range of key groups
// that cuts through both subtasks' ranges. It returns the checkpoint and
// the savepoint's dump.
func sameAsSavepoint(t *testing.T, meta *savepoint.Metadata, now int64, src []*jobState, checkpoint CheckpointFunc) (savepoint.Source, []string) {
	t.Helper()
	sp := WriteSavepoint(t, tempDir(t, "savepoint"), meta, now, backends(src)...)
	chk := checkpoint(t, meta, backends(src))
	want := Dump(t, sp, 0)
	SameDump(t, DumpSource(t, chk, 0), want)
	part := keygroup.Range{Start: maxP/2 - 5, End: maxP/2 + 5}
	for ref := range meta.Refs(0) {
		SameDump(t, rangeDump(t, chk, ref, part), rangeDump(t, sp, ref, part))
	}
	return chk, want
}

func rangeDump(t testing.TB, src savepoint.Source, ref int, kgs keygroup.Range) []string {
	t.Helper()
	it := src.Entries(context.Background(), nth(src, 0, ref), kgs)
	defer it.Close()
	var out []string
	for it.Next() {
		e := it.Entry()
		if !kgs.Contains(e.KeyGroup) {
			t.Fatalf("ref %d: an entry of key group %d, outside the requested %v", ref, e.KeyGroup, kgs)
		}
		out = append(out, fmt.Sprintf("kg %d key %x ns %x mapkey %x value %x time %d", e.KeyGroup, e.Key, e.Namespace, e.MapKey, e.Value, e.Timestamp))
	}
	must(t, it.Err())
	return out
}
