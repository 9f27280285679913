package pebblebackend

import (
	"bytes"
	"cmp"
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// Keys, namespaces and map keys that are prefixes of each other and hold the
// bytes the escape treats specially. With max parallelism 1 every key is in
// key group 0, so all of them meet in one segment.
var (
	orderKeys = []string{"", "a", "a\x00", "a\x00\x00", "a\x00\x01", "a\x01", "ab", "\xff"}
	orderNSs  = [][]byte{nil, {0}, {0, 0}, {0, 0xFF}, {1}, {0xFF}}
	orderMKs  = [][]byte{{}, {0}, {0, 0}, {0, 1}, {1}, {0xFF, 0}}
)

func compareEntries(a, b savepoint.Entry) int {
	return cmp.Or(bytes.Compare(a.Key, b.Key), bytes.Compare(a.Namespace, b.Namespace), bytes.Compare(a.MapKey, b.MapKey))
}

// TestSnapshotOrder writes map and list entries in random order and checks
// that the snapshot streams them in the format's order, (key, namespace, map
// key) compared component-wise, with list elements in list order.
func TestSnapshotOrder(t *testing.T) {
	b := newTestBackend(t, 1, keygroup.All(1))
	mapSpec := state.NewMap("m", serializers.Bytes(), serializers.Int64(), state.WithNamespace(serializers.Bytes())).Spec()
	listSpec := state.NewList("l", serializers.Int64(), state.WithNamespace(serializers.Bytes())).Spec()
	m, err := b.RegisterMap(mapSpec)
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.RegisterList(listSpec)
	if err != nil {
		t.Fatal(err)
	}

	type op struct {
		key string
		ns  []byte
		mk  []byte
	}
	var ops []op
	for _, k := range orderKeys {
		for _, ns := range orderNSs {
			for _, mk := range orderMKs {
				ops = append(ops, op{k, ns, mk})
			}
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	r.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	var wantMap []savepoint.Entry
	lists := map[string][]int64{}
	for i, o := range ops {
		setKey(t, b, o.key)
		if err := m.Put(o.ns, o.mk, state.Cell{Value: int64(i)}); err != nil {
			t.Fatal(err)
		}
		if err := l.Append(o.ns, state.Cell{Value: int64(i)}); err != nil {
			t.Fatal(err)
		}
		wantMap = append(wantMap, savepoint.Entry{Key: []byte(o.key), Namespace: o.ns, MapKey: o.mk, Value: int64Bytes(int64(i))})
		slot := o.key + "|" + string(o.ns)
		lists[slot] = append(lists[slot], int64(i))
	}
	slices.SortFunc(wantMap, compareEntries)

	now := int64(1000)
	meta := statetest.NewMetadata(statetest.NewOperator("op", 1, 1, serializers.String(), []*state.Spec{mapSpec, listSpec}, nil), now)
	sp := statetest.WriteSavepoint(t, filepath.Join(t.TempDir(), "sp"), meta, now, b)

	got := sptest.EntriesOf(t, sp, savepoint.StateRef{})
	if len(got) != len(wantMap) {
		t.Fatalf("%d map entries in the snapshot, want %d", len(got), len(wantMap))
	}
	for i := range got {
		if compareEntries(got[i], wantMap[i]) != 0 || !bytes.Equal(got[i].Value, wantMap[i].Value) {
			t.Fatalf("map entry %d is %+v, want %+v", i, got[i], wantMap[i])
		}
	}

	var prev *savepoint.Entry
	gotLists := map[string][]int64{}
	for _, e := range sptest.EntriesOf(t, sp, sp.Metadata().Refs(0)[1]) {
		if prev != nil && compareEntries(*prev, e) > 0 {
			t.Fatalf("list entry of (%x, %x) after one of (%x, %x)", e.Key, e.Namespace, prev.Key, prev.Namespace)
		}
		slot := string(e.Key) + "|" + string(e.Namespace)
		v, err := serializers.Int64().Decode(e.Value)
		if err != nil {
			t.Fatal(err)
		}
		gotLists[slot] = append(gotLists[slot], v)
		prev = &e
	}
	if len(gotLists) != len(lists) {
		t.Fatalf("%d lists in the snapshot, want %d", len(gotLists), len(lists))
	}
	for slot, want := range lists {
		if !slices.Equal(gotLists[slot], want) {
			t.Errorf("list %q: %v, want %v", slot, gotLists[slot], want)
		}
	}
}

func int64Bytes(v int64) []byte {
	b, _ := serializers.Int64().Append(nil, v)
	return b
}

// TestSnapshotRequiresDeclaredStates refuses to snapshot into metadata that
// lacks a state the backend holds.
func TestSnapshotRequiresDeclaredStates(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	kept := state.NewValue("kept", serializers.Int64()).Spec()
	for _, s := range []*state.Spec{kept, state.NewValue("missing", serializers.Int64()).Spec()} {
		if _, err := b.RegisterValue(s); err != nil {
			t.Fatal(err)
		}
	}
	op := statetest.NewOperator("op", 1, 128, serializers.String(), []*state.Spec{kept}, nil)
	staging, err := storage.Stage(filepath.Join(t.TempDir(), "sp"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer staging.Abort()
	w, err := snapshotfmt.NewWriter(staging, statetest.NewMetadata(op, 0), snapshotfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	f, err := w.CreateDataFile(context.Background(), "data")
	if err != nil {
		t.Fatal(err)
	}
	err = b.Snapshot(context.Background(), f, 0, &op, 0)
	if err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Fatalf("Snapshot = %v, want an error naming the missing state", err)
	}
}
