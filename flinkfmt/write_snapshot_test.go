package flinkfmt

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/storage"
)

// snapshotOf rebuilds the snapshot of a restored serializer with the
// builders, for the classes they cover.
func snapshotOf(s *typeser.Serializer) (Snapshot, bool) {
	var nested []Snapshot
	for _, a := range s.Args {
		n, ok := snapshotOf(a)
		if !ok {
			return Snapshot{}, false
		}
		nested = append(nested, n)
	}
	var snap Snapshot
	var err error
	switch {
	case s.Class == TupleSnapshotClass:
		snap, err = TupleSnapshot(s.Type.Class, nested...)
	case s.Class == TimerSnapshotClass && len(nested) == 2:
		snap, err = TimerSnapshot(nested[0], nested[1])
	case s.Class == ListSnapshotClass && len(nested) == 1:
		snap, err = ListSnapshot(nested[0])
	case s.Class == MapSnapshotClass && len(nested) == 2:
		snap, err = MapSnapshot(nested[0], nested[1])
	case s.Class == TTLSnapshotClass && len(nested) == 2:
		snap, err = TTLSnapshot(nested[1])
	case s.Version == 3 && len(nested) == 0 && (s.Class == VoidNamespaceClass ||
		strings.HasPrefix(s.Class, basePkg) && strings.HasSuffix(s.Class, "SerializerSnapshot")):
		snap = SimpleSnapshot(s.Class)
	default:
		return Snapshot{}, false
	}
	return snap, err == nil
}

// The header builder, given the structure of a reference savepoint's
// header (snapshot classes and nesting, states and their kinds), writes
// that header byte for byte: for every current-format header of the
// fixtures whose snapshot classes the builders cover.
func TestNewCanonicalHeaderReproducesFixtures(t *testing.T) {
	root, rows := inventory(t)
	ctx := context.Background()
	built, timers := 0, 0
	classes := map[string]bool{}
	for _, row := range rows {
		r, err := Open(ctx, storage.LocalDir(filepath.Join(root, row.dir)), Options{})
		if err != nil {
			t.Fatal(err)
		}
	operators:
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(ctx, op)
			if errors.Is(err, ErrNotKeyed) || errors.Is(err, ErrUnsupported) {
				continue
			}
			for _, sk := range k.subtasks {
				hd := sk.header
				if hd == nil || hd.ProxyVersion != 6 || sk.layout == LayoutRawTimers {
					continue
				}
				key, ok := snapshotOf(hd.Key)
				if !ok {
					continue operators
				}
				var specs []StateSpec
				hasTimers := false
				for _, m := range hd.States {
					v, ok := snapshotOf(m.Value)
					if !ok {
						continue operators
					}
					spec := StateSpec{Name: m.Name, Kind: m.Kind, Value: v}
					if m.Kind == Timers {
						hasTimers = true
					} else if spec.Namespace, ok = snapshotOf(m.Serializers[namespaceSerializerKey]); !ok {
						continue operators
					}
					specs = append(specs, spec)
				}
				h, err := NewCanonicalHeader(key, hd.Compressed, specs)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(h.Bytes, hd.raw) {
					t.Errorf("%s: operator %s subtask %d: the built header differs from the recorded one", row.dir, op.ID, sk.index)
					continue
				}
				built++
				if hasTimers {
					timers++
				}
				for _, m := range hd.States {
					classes[m.Value.Class] = true
				}
			}
		}
	}
	t.Logf("%d headers built byte for byte (%d with timer services); value serializers %v", built, timers, classes)
	if built < 100 || timers == 0 {
		t.Errorf("only %d headers built, %d with timers", built, timers)
	}
}
