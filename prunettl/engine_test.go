package prunettl_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/heapbackend"
	"github.com/stateproc/stateproc/engine/pebblebackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/prunettl"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/ttl"
)

const (
	maxP    = 128
	subtask = 2
	t0      = int64(1_700_000_000_000)
	hour    = int64(time.Hour / time.Millisecond)
)

// specs declares a state of every kind with TTL, with or without
// full-snapshot cleanup, beside a state without TTL.
func specs(cleanup bool) []*state.Spec {
	c := ttl.New(time.Duration(10*hour) * time.Millisecond)
	c.CleanupFullSnapshot = cleanup
	return []*state.Spec{
		state.NewValue("value", serializers.Int64(), state.WithTTL(c)).Spec(),
		state.NewList("list", serializers.String(), state.WithTTL(c), state.WithNamespace(serializers.Int64())).Spec(),
		state.NewMap("map", serializers.String(), serializers.Int64(), state.WithTTL(c)).Spec(),
		state.NewReducing("sum", serializers.Int64(), func(a, b int64) int64 { return a + b }, state.WithTTL(c)).Spec(),
		state.NewValue("plain", serializers.String()).Spec(),
	}
}

// fill writes the same state into b whatever its cleanup setting: keys
// with entries last modified between 20h before now and now, so that about
// half are expired at now under the 10h TTL, and some keys lose everything.
func fill(t *testing.T, b state.Backend, ss []*state.Spec, now int64) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	v, err := b.RegisterValue(ss[0])
	must(err)
	l, err := b.RegisterList(ss[1])
	must(err)
	m, err := b.RegisterMap(ss[2])
	must(err)
	s, err := b.RegisterValue(ss[3])
	must(err)
	p, err := b.RegisterValue(ss[4])
	must(err)
	timers, err := b.Timers("timers", serializers.Void())
	must(err)
	ns := func(i int64) []byte { b, _ := serializers.Int64().Append(nil, i); return b }
	at := func(i, j int) int64 { return now - int64((i*7+j*13)%40)*hour/2 }
	for i := range 3000 {
		key := fmt.Appendf(nil, "key-%05d", i)
		if kg := keygroup.Of(key, maxP); !b.KeyGroups().Contains(kg) {
			continue
		}
		must(b.SetCurrentKey(key))
		must(v.Put(nil, state.Cell{Value: int64(i), Timestamp: at(i, 0)}))
		for n := range int64(i % 3) {
			for j := range 1 + i%4 {
				must(l.Append(ns(n), state.Cell{Value: fmt.Sprintf("e%d", j), Timestamp: at(i, j+int(n))}))
			}
		}
		for j := range i % 5 {
			must(m.Put(nil, fmt.Sprintf("m%d", j), state.Cell{Value: int64(j), Timestamp: at(i, j)}))
		}
		if i%2 == 0 {
			must(s.Put(nil, state.Cell{Value: int64(i), Timestamp: at(i, 3)}))
		}
		must(p.Put(nil, state.Cell{Value: "kept"}))
		must(timers.Register(nil, now+int64(i)))
	}
}

// snapshot writes a savepoint of one operator at two subtasks, each from a
// backend of the given kind, as the engine names their data files.
func snapshot(t *testing.T, kind, dir string, cleanup bool, now int64, codec snapshotfmt.Codec) {
	t.Helper()
	ctx := context.Background()
	ss := specs(cleanup)
	op := savepoint.Operator{UID: "op", Name: "Op", Parallelism: subtask, MaxParallelism: maxP, KeyHash: keygroup.Murmur3, Key: serializers.String().Snapshot(),
		Timers: []savepoint.TimerService{{Name: "timers", Namespace: serializers.Void().Snapshot()}}}
	for _, s := range ss {
		op.States = append(op.States, s.Model())
	}
	meta := &savepoint.Metadata{ID: 3, CreatedAt: now, Operators: []savepoint.Operator{op}}
	st, err := storage.Stage(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := snapshotfmt.NewWriter(st, meta, snapshotfmt.Options{Compression: codec})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for i := range subtask {
		kgs := keygroup.ForSubtask(i, subtask, maxP)
		var b state.Backend
		if kind == "heap" {
			b, err = heapbackend.New(heapbackend.Options{MaxParallelism: maxP, KeyGroups: kgs})
		} else {
			b, err = pebblebackend.New(pebblebackend.Options{Dir: filepath.Join(t.TempDir(), "db"), MaxParallelism: maxP, KeyGroups: kgs})
		}
		if err != nil {
			t.Fatal(err)
		}
		fill(t, b, ss, now)
		f, err := w.CreateDataFile(ctx, fmt.Sprintf("op%03d-%05d.data", 0, i))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Snapshot(ctx, f, 0, &meta.Operators[0], now); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
}

// entriesOnly is a source whose iterators give entries one by one.
type entriesOnly struct{ *snapshotfmt.Reader }

func (s entriesOnly) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	return struct{ savepoint.EntryIterator }{s.Reader.Entries(ctx, ref, kgs)}
}

// prune-ttl of a savepoint taken without cleanup gives, at time T, the data
// files and the index of the savepoint the engine takes of the same state
// at T with full-snapshot cleanup; the metadata differs only in the TTL
// flag and the lineage. Block compression is kept too.
func TestPruneMatchesFullSnapshotCleanup(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		codec snapshotfmt.Codec
	}{{"heap", snapshotfmt.CodecNone}, {"pebble", snapshotfmt.CodecNone}, {"pebble", snapshotfmt.CodecZstd}} {
		kind := tc.kind
		t.Run(fmt.Sprintf("%s-codec%d", kind, tc.codec), func(t *testing.T) {
			dir := t.TempDir()
			raw, cleaned, pruned := filepath.Join(dir, "raw"), filepath.Join(dir, "cleaned"), filepath.Join(dir, "pruned")
			now := t0
			snapshot(t, kind, raw, false, now, tc.codec)
			snapshot(t, kind, cleaned, true, now, tc.codec)
			r := sptest.Open(t, raw)
			rep, err := prunettl.Run(context.Background(), r, raw, prunettl.Options{Now: now}, rewrite.Options{Out: pruned})
			if err != nil {
				t.Fatal(err)
			}
			// Entries must be both dropped and kept for the test to prove
			// anything.
			var dropped, kept uint64
			for _, s := range rep.States {
				dropped += s.Dropped
				kept += s.After
			}
			if dropped == 0 || kept == 0 {
				t.Fatalf("%d entries dropped, %d kept: the test proves nothing", dropped, kept)
			}
			a, b := sptest.DataFiles(t, pruned), sptest.DataFiles(t, cleaned)
			if !maps.EqualFunc(a, b, bytes.Equal) {
				t.Fatalf("data files differ: %v vs %v", slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)))
			}
			// A layout that gives entries one by one, not framed items,
			// prunes into the same files; it has no block compression to
			// keep, so only uncompressed files compare.
			if tc.codec == snapshotfmt.CodecNone {
				byEntry := filepath.Join(dir, "by-entry")
				if _, err := prunettl.Run(context.Background(), entriesOnly{r}, raw, prunettl.Options{Now: now}, rewrite.Options{Out: byEntry}); err != nil {
					t.Fatal(err)
				}
				if c := sptest.DataFiles(t, byEntry); !maps.EqualFunc(a, c, bytes.Equal) {
					t.Fatalf("data files pruned entry by entry differ: %v vs %v", slices.Sorted(maps.Keys(c)), slices.Sorted(maps.Keys(a)))
				}
			}
			pa, pb := sptest.Open(t, pruned), sptest.Open(t, cleaned)
			if sa, sb := sptest.OperatorSegments(t, pa, 0), sptest.OperatorSegments(t, pb, 0); !reflect.DeepEqual(sa, sb) {
				t.Fatalf("indexes differ: %d segments vs %d", len(sa), len(sb))
			}
			ma, mb := *pa.Metadata(), *pb.Metadata()
			if len(ma.Lineage) != 1 || len(mb.Lineage) != 0 {
				t.Fatalf("lineage %q, %q", ma.Lineage, mb.Lineage)
			}
			for i := range ma.Operators[0].States {
				sa, sb := ma.Operators[0].States[i], mb.Operators[0].States[i]
				if sa.TTL != nil {
					ta, tb := *sa.TTL, *sb.TTL
					ta.CleanupFullSnapshot = tb.CleanupFullSnapshot
					sa.TTL, sb.TTL = &ta, &tb
				}
				if !reflect.DeepEqual(sa, sb) {
					t.Fatalf("state %d: %+v vs %+v", i, sa, sb)
				}
			}
		})
	}
}
