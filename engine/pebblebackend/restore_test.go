package pebblebackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/engine/heapbackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

const restoreMaxP = 16

// restoreSpecs are the states of the restore tests: one of each layout.
func restoreSpecs() (*state.ValueDescriptor[string], *state.ListDescriptor[int64], *state.MapDescriptor[string, int64]) {
	return state.NewValue("v", serializers.String()),
		state.NewList("l", serializers.Int64()),
		state.NewMap("m", serializers.String(), serializers.Int64())
}

// declareRestoreStates declares the restore tests' states and timer
// service on b, and returns the value state.
func declareRestoreStates(t testing.TB, b state.Backend) state.ValueState[string] {
	t.Helper()
	v, l, m := restoreSpecs()
	vs, err := state.GetValue(b, nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := state.GetList(b, nil, l); err != nil {
		t.Fatal(err)
	}
	if _, err := state.GetMap(b, nil, m); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Timers("t", serializers.Void()); err != nil {
		t.Fatal(err)
	}
	return vs
}

// restoreSavepoint writes a savepoint of every layout, over all key
// groups, from a heap backend.
func restoreSavepoint(t testing.TB) savepoint.Source {
	t.Helper()
	b, err := heapbackend.New(heapbackend.Options{MaxParallelism: restoreMaxP, KeyGroups: keygroup.All(restoreMaxP)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	vd, ld, md := restoreSpecs()
	v, err := state.GetValue(b, nil, vd)
	must(t, err)
	l, err := state.GetList(b, nil, ld)
	must(t, err)
	m, err := state.GetMap(b, nil, md)
	must(t, err)
	ts, err := b.Timers("t", serializers.Void())
	must(t, err)
	for i := range 300 {
		if err := b.SetCurrentKey(fmt.Appendf(nil, "key\x00%d", i)); err != nil {
			t.Fatal(err)
		}
		must(t, v.Update(fmt.Sprint("value ", i)))
		for j := range i % 4 {
			must(t, l.Add(int64(i*10+j)))
			must(t, m.Put(fmt.Sprint("mk ", j), int64(j)))
		}
		must(t, ts.Register(nil, int64(1000-i)))
	}
	specs := []*state.Spec{vd.Spec(), ld.Spec(), md.Spec()}
	op := statetest.NewOperator("op", 1, restoreMaxP, serializers.String(), specs, []statetest.TimerService{{Name: "t", Namespace: serializers.Void()}})
	return statetest.WriteSavepoint(t, filepath.Join(t.TempDir(), "sp"), statetest.NewMetadata(op, 0), 0, b)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// restoredDump restores src into a new backend of each kind and returns
// what a savepoint of each holds, with the Pebble backend.
func restoredDump(t *testing.T, src savepoint.Source) (pebble, heap []string, b *Backend, v state.ValueState[string]) {
	t.Helper()
	b = newTestBackend(t, restoreMaxP, keygroup.All(restoreMaxP))
	v = declareRestoreStates(t, b)
	statetest.Restore(t, b, src, state.RestoreOptions{})
	h, err := heapbackend.New(heapbackend.Options{MaxParallelism: restoreMaxP, KeyGroups: keygroup.All(restoreMaxP)})
	must(t, err)
	defer h.Close()
	declareRestoreStates(t, h)
	statetest.Restore(t, h, src, state.RestoreOptions{})
	meta := src.Metadata()
	pebble = statetest.DumpSource(t, statetest.WriteSavepoint(t, filepath.Join(t.TempDir(), "pebble"), meta, 0, b), 0)
	heap = statetest.DumpSource(t, statetest.WriteSavepoint(t, filepath.Join(t.TempDir(), "heap"), meta, 0, h), 0)
	return pebble, heap, b, v
}

// restoredTables flushes the memtable and counts the tables above the
// bottom level, and in it.
func restoredTables(t testing.TB, b *Backend) [2]int64 {
	t.Helper()
	must(t, b.db.Flush())
	levels := b.db.Metrics().Levels
	var n [2]int64
	for _, l := range levels[:len(levels)-1] {
		n[0] += l.TablesCount
	}
	n[1] = levels[len(levels)-1].TablesCount
	return n
}

// leftovers lists what a restore left in the database's directory besides
// Pebble's own files.
func leftovers(t testing.TB, b *Backend) []string {
	t.Helper()
	entries, err := os.ReadDir(b.dir)
	must(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "restore") {
			out = append(out, e.Name())
		}
	}
	return out
}

// A savepoint in the format's order is restored by writing tables and
// ingesting them: nothing passes through the memtable, the tables land in
// the bottom level, and the state is the savepoint's.
func TestRestoreIngestsOrderedEntries(t *testing.T) {
	src := restoreSavepoint(t)
	got, heap, b, vs := restoredDump(t, src)
	statetest.SameDump(t, got, statetest.DumpSource(t, src, 0))
	statetest.SameDump(t, heap, got)
	if tables := restoredTables(t, b); tables[0] != 0 || tables[1] == 0 || b.db.Metrics().Ingest.Count != 1 {
		t.Fatalf("restore left %d tables in the memtable and levels 0 to 5, %d in the bottom level, in %d ingestions; want 0, some, in 1",
			tables[0], tables[1], b.db.Metrics().Ingest.Count)
	}
	if l := leftovers(t, b); l != nil {
		t.Fatalf("the restore left %v in the database's directory", l)
	}
	// Restored state reads and takes writes as any other.
	setKey(t, b, "key\x007")
	if got, ok, err := vs.Value(); err != nil || !ok || got != "value 7" {
		t.Fatalf("restored value = %q, %v, %v; want %q", got, ok, err, "value 7")
	}
	must(t, vs.Update("new"))
	if got, _, err := vs.Value(); err != nil || got != "new" {
		t.Fatalf("value after an update = %q, %v", got, err)
	}
}

// A restore cuts its tables at the size Pebble cuts the tables of its base
// level at, so that later compactions rewrite no more than they would.
func TestRestoreCutsTables(t *testing.T) {
	src := restoreSavepoint(t)
	b := newTestBackend(t, restoreMaxP, keygroup.All(restoreMaxP))
	declareRestoreStates(t, b)
	b.opts.TargetFileSizes[1] = 2 << 10
	statetest.Restore(t, b, src, state.RestoreOptions{})
	var raw uint64
	for _, ref := range src.Metadata().Refs(0) {
		segs, err := src.Segments(context.Background(), ref, keygroup.All(restoreMaxP))
		must(t, err)
		for _, seg := range segs {
			raw += seg.Bytes
		}
	}
	tables := restoredTables(t, b)
	if want := int64(raw / (2 << 10)); tables[0] != 0 || tables[1] < want/2 || tables[1] > 2*want+1 {
		t.Fatalf("restoring %d bytes in tables of 2 KiB left %d tables above the bottom level and %d in it; want none above and about %d in it",
			raw, tables[0], tables[1], want)
	}
	statetest.SameDump(t, statetest.DumpSource(t, statetest.WriteSavepoint(t, filepath.Join(t.TempDir(), "sp"), src.Metadata(), 0, b), 0),
		statetest.DumpSource(t, src, 0))
}

// reordered gives the entries of a source in another order: key groups up
// to from as they are, later ones reversed, with one entry of key group
// from+1 given again after it with another value.
// givenAgain is the serialized value of the entry given twice.
var givenAgain, _ = serializers.String().Append(nil, "given again")

type reordered struct {
	savepoint.Source
	from int
}

func (s reordered) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	it := s.Source.Entries(ctx, ref, kgs)
	defer it.Close()
	var all []savepoint.Entry
	for it.Next() {
		e := *it.Entry()
		e.Key, e.Namespace, e.MapKey, e.Value = slices.Clone(e.Key), slices.Clone(e.Namespace), slices.Clone(e.MapKey), slices.Clone(e.Value)
		all = append(all, e)
	}
	if err := it.Err(); err != nil {
		return savepoint.Failed(err)
	}
	var out []savepoint.Entry
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].KeyGroup == all[i].KeyGroup {
			j++
		}
		group := all[i:j]
		if all[i].KeyGroup > s.from {
			slices.Reverse(group)
		}
		out = append(out, group...)
		if all[i].KeyGroup == s.from+1 && ref.State == 0 && !ref.Timer {
			again := group[0]
			again.Value = givenAgain
			out = append(out, again)
		}
		i = j
	}
	return sptest.Iter(out)
}

// Entries out of the format's order, and a key given twice, give the state
// that writing every entry in turn gives, as the heap backend does: what
// ascended is ingested, the rest goes through the memtable.
func TestRestoreOutOfOrder(t *testing.T) {
	src := reordered{Source: restoreSavepoint(t), from: 3}
	got, heap, b, _ := restoredDump(t, src)
	statetest.SameDump(t, got, heap)
	if !slices.ContainsFunc(got, func(line string) bool { return strings.Contains(line, fmt.Sprintf("value %x ", givenAgain)) }) {
		t.Fatal("the value given last for a key is not the one restored")
	}
	if tables := restoredTables(t, b); tables[0] == 0 || tables[1] == 0 || b.db.Metrics().Ingest.Count != 1 {
		t.Fatalf("restore left %d tables in the memtable and levels 0 to 5, %d in the bottom level, in %d ingestions; want the ordered start ingested and the rest written",
			tables[0], tables[1], b.db.Metrics().Ingest.Count)
	}
	if l := leftovers(t, b); l != nil {
		t.Fatalf("the restore left %v in the database's directory", l)
	}
}

// failing fails its entries after n.
type failing struct {
	savepoint.Source
	n int
}

var errInjected = errors.New("injected read error")

func (s failing) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	return &failingEntries{EntryIterator: s.Source.Entries(ctx, ref, kgs), left: s.n}
}

type failingEntries struct {
	savepoint.EntryIterator
	left int
}

func (f *failingEntries) Next() bool {
	if f.left == 0 {
		return false
	}
	f.left--
	return f.EntryIterator.Next()
}

func (f *failingEntries) Err() error {
	if f.left == 0 {
		return errInjected
	}
	return f.EntryIterator.Err()
}

// A restore that fails midway ingests nothing and leaves no table behind.
func TestRestoreFailureLeavesNothing(t *testing.T) {
	b := newTestBackend(t, restoreMaxP, keygroup.All(restoreMaxP))
	declareRestoreStates(t, b)
	err := b.Restore(context.Background(), failing{Source: restoreSavepoint(t), n: 100}, 0, state.RestoreOptions{})
	if !errors.Is(err, errInjected) {
		t.Fatalf("restore = %v, want the source's error", err)
	}
	if l := leftovers(t, b); l != nil {
		t.Fatalf("the failed restore left %v in the database's directory", l)
	}
	if m := b.db.Metrics(); m.Ingest.Count != 0 || m.Total().TablesCount != 0 {
		t.Fatalf("the failed restore ingested %d times, %d tables", m.Ingest.Count, m.Total().TablesCount)
	}
}

// A restore whose ingestion fails leaves no tables behind either.
func TestRestoreFailedIngestLeavesNothing(t *testing.T) {
	b := newTestBackend(t, restoreMaxP, keygroup.All(restoreMaxP))
	w := b.newRestoreWriter(context.Background())
	for i := range 3 {
		must(t, w.set([]byte{0, 0, 0, 0, byte(i)}, []byte("value")))
	}
	must(t, w.closeTable())
	must(t, os.Truncate(w.paths[0], 10))
	if err := w.finish(); err == nil {
		t.Fatal("the ingestion of a damaged table succeeded")
	}
	if l := leftovers(t, b); l != nil {
		t.Fatalf("the failed ingestion left %v in the database's directory", l)
	}
}
