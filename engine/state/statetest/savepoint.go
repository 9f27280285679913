package statetest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// TimerService is a timer service as a backend declares it with Timers.
type TimerService struct {
	Name      string
	Namespace serializers.Serializer
}

// NewOperator describes a keyed operator as savepoint metadata records it,
// with the murmur3 key hash. Refs follow the order of specs, then of timers.
func NewOperator(uid string, parallelism, maxParallelism int, key serializers.Serializer, specs []*state.Spec, timers []TimerService) savepoint.Operator {
	op := savepoint.Operator{
		UID:            uid,
		Name:           uid,
		Parallelism:    parallelism,
		MaxParallelism: maxParallelism,
		KeyHash:        keygroup.Murmur3,
		Key:            key.Snapshot(),
	}
	for _, s := range specs {
		op.States = append(op.States, s.Model())
	}
	for _, ts := range timers {
		op.Timers = append(op.Timers, savepoint.TimerService{Name: ts.Name, Namespace: ts.Namespace.Snapshot()})
	}
	return op
}

// NewMetadata returns the metadata of a savepoint of the single operator op,
// taken at now.
func NewMetadata(op savepoint.Operator, now int64) *savepoint.Metadata {
	return &savepoint.Metadata{ID: 1, CreatedAt: now, Operators: []savepoint.Operator{op}}
}

// WriteSavepoint writes a savepoint into dir, which must not exist: each
// backend snapshots itself, at now, as one subtask of meta.Operators[0],
// into its own data file. It returns the savepoint opened.
func WriteSavepoint(t testing.TB, dir string, meta *savepoint.Metadata, now int64, subtasks ...state.Backend) *snapshotfmt.Reader {
	t.Helper()
	ctx := context.Background()
	staging, err := storage.Stage(dir, false)
	must(t, err)
	defer staging.Abort()
	w, err := snapshotfmt.NewWriter(staging, meta, snapshotfmt.Options{})
	must(t, err)
	defer w.Abort()
	for i, b := range subtasks {
		f, err := w.CreateDataFile(ctx, fmt.Sprintf("subtask-%d", i))
		must(t, err)
		must(t, b.Snapshot(ctx, f, 0, &meta.Operators[0], now))
		must(t, f.Close())
	}
	must(t, w.Finish(ctx))
	return sptest.Open(t, dir)
}

// Restore restores operator 0 of src into b, whose states must already be
// declared.
func Restore(t testing.TB, b state.Backend, src savepoint.Source, opts state.RestoreOptions) {
	t.Helper()
	must(t, b.Restore(context.Background(), src, 0, opts))
}

// nth returns the ref of operator op's state (or timer service) number n,
// counting its states and then its timer services.
func nth(src savepoint.Source, op, n int) savepoint.StateRef { return src.Metadata().Refs(op)[n] }

// Count returns the number of entries the index records for operator op's
// state (or timer service) number ref (see nth), after checking it against
// the data.
func Count(t testing.TB, r *snapshotfmt.Reader, op, ref int) int {
	t.Helper()
	var n uint64
	for _, seg := range sptest.Segments(t, r, nth(r, op, ref)) {
		n += seg.Entries
	}
	eq(t, "entries read", uint64(len(sptest.EntriesOf(t, r, nth(r, op, ref)))), n)
	return int(n)
}

// Dump lists every entry of operator op as a line of text, state by state
// and key group by key group. Savepoints holding the same state give the
// same dump, however their data files are cut.
func Dump(t testing.TB, r *snapshotfmt.Reader, op int) []string {
	t.Helper()
	return DumpSource(t, r, op)
}

// DumpSource is Dump for a savepoint or checkpoint of any layout: sources
// holding the same state give the same dump.
func DumpSource(t testing.TB, src savepoint.Source, op int) []string {
	t.Helper()
	o := &src.Metadata().Operators[op]
	var out []string
	for ref, sref := range src.Metadata().Refs(op) {
		it := src.Entries(context.Background(), sref, keygroup.All(o.MaxParallelism))
		for it.Next() {
			e := it.Entry()
			out = append(out, fmt.Sprintf("ref %d kg %d key %x ns %x mapkey %x value %x time %d",
				ref, e.KeyGroup, e.Key, e.Namespace, e.MapKey, e.Value, e.Timestamp))
		}
		must(t, it.Err())
		must(t, it.Close())
	}
	return out
}

// SameDump fails the test unless the dumps are equal, naming the first
// difference.
func SameDump(t testing.TB, got, want []string) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("dump line %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("dump has %d lines, want %d", len(got), len(want))
	}
}

// tempDir returns a path for a savepoint directory that does not exist yet.
func tempDir(t testing.TB, name string) string {
	return filepath.Join(t.TempDir(), name)
}

// snapshot writes a savepoint of f's backend at now.
func snapshot(f *fixture, specs []*state.Spec, now int64) *snapshotfmt.Reader {
	f.t.Helper()
	op := NewOperator("op", 1, maxP, serializers.String(), specs, nil)
	return WriteSavepoint(f.t, tempDir(f.t, "savepoint"), NewMetadata(op, now), now, f.b)
}

// counts returns the number of entries of each of the first n refs.
func counts(t testing.TB, r *snapshotfmt.Reader, n int) []int {
	t.Helper()
	out := make([]int, n)
	for ref := range out {
		out[ref] = Count(t, r, 0, ref)
	}
	return out
}

// lastModified returns the TTL timestamp that prefixes a stored value.
func lastModified(t testing.TB, value []byte) int64 {
	t.Helper()
	ts, _ := sptest.SplitTTL(t, value)
	return ts
}
