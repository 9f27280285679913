package sptest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// Open opens and fully verifies the savepoint in dir; it is closed when the
// test ends.
func Open(t testing.TB, dir string) *snapshotfmt.Reader {
	t.Helper()
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := Verify(r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Entries returns every entry of keyed state name of operator uid, in key
// group order, with its bytes copied.
func Entries(t testing.TB, src savepoint.Source, uid, name string) []savepoint.Entry {
	t.Helper()
	return EntriesOf(t, src, ref(t, src, uid, name, false))
}

// Timers returns every timer of timer service name of operator uid.
func Timers(t testing.TB, src savepoint.Source, uid, name string) []savepoint.Entry {
	t.Helper()
	return EntriesOf(t, src, ref(t, src, uid, name, true))
}

func ref(t testing.TB, src savepoint.Source, uid, name string, timer bool) savepoint.StateRef {
	t.Helper()
	m := src.Metadata()
	for i := range m.Operators {
		if m.Operators[i].UID != uid {
			continue
		}
		for _, r := range m.Refs(i) {
			if r.Timer == timer && m.RefName(r) == name {
				return r
			}
		}
		t.Fatalf("operator %q has no %s %q", uid, map[bool]string{false: "state", true: "timer service"}[timer], name)
	}
	t.Fatalf("the savepoint has no operator %q", uid)
	return savepoint.StateRef{}
}

// Segments returns the segments of ref, in key-group order.
func Segments(t testing.TB, src savepoint.Source, ref savepoint.StateRef) []savepoint.Segment {
	t.Helper()
	segs, err := src.Segments(context.Background(), ref, keygroup.All(src.Metadata().Operators[ref.Operator].MaxParallelism))
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// EntriesOf returns every entry of ref, in key-group order, with its bytes
// copied.
func EntriesOf(t testing.TB, src savepoint.Source, ref savepoint.StateRef) []savepoint.Entry {
	t.Helper()
	var out []savepoint.Entry
	for _, seg := range Segments(t, src, ref) {
		out = append(out, SegmentEntries(t, src, seg)...)
	}
	return out
}

// SegmentEntries returns the entries of one segment, with their bytes
// copied.
func SegmentEntries(t testing.TB, src savepoint.Source, seg savepoint.Segment) []savepoint.Entry {
	t.Helper()
	var out []savepoint.Entry
	it := savepoint.SegmentEntries(context.Background(), src, seg)
	defer it.Close()
	for it.Next() {
		e := it.Entry()
		out = append(out, savepoint.Entry{KeyGroup: e.KeyGroup, Key: bytes.Clone(e.Key), Namespace: bytes.Clone(e.Namespace),
			MapKey: bytes.Clone(e.MapKey), Value: bytes.Clone(e.Value), Timestamp: e.Timestamp})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// SplitTTL splits a TTL state's stored value into its last-modified time
// and the value's bytes.
func SplitTTL(t testing.TB, v []byte) (int64, []byte) {
	t.Helper()
	if len(v) < 8 {
		t.Fatalf("TTL value of %d bytes", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), v[8:]
}

// Keys returns the distinct keys of entries, as strings, sorted.
func Keys(entries []savepoint.Entry) []string {
	var keys []string
	for _, e := range entries {
		keys = append(keys, string(e.Key))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// KeyedState returns every keyed state and timer service of the savepoint,
// by "uid/name", with the entries in key-group order. Two savepoints of the
// same job at the same max parallelism hold equal maps when they hold the
// same state, whatever their parallelism and backend.
func KeyedState(t testing.TB, src savepoint.Source) map[string][]savepoint.Entry {
	t.Helper()
	out := map[string][]savepoint.Entry{}
	m := src.Metadata()
	for i, op := range m.Operators {
		for _, ref := range m.Refs(i) {
			out[op.UID+"/"+m.RefName(ref)] = EntriesOf(t, src, ref)
		}
	}
	return out
}

// Contents lists the entries of every keyed state and timer service by
// "uid/name", each entry as a string, sorted by key and namespace; within
// a key and namespace, entries keep the state's own order (a list's, say).
// Unlike KeyedState, the lists are comparable between savepoints of any max
// parallelism.
func Contents(t testing.TB, src savepoint.Source) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	m := src.Metadata()
	segs, err := savepoint.AllSegments(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	for _, seg := range segs {
		name := m.Operators[seg.Ref.Operator].UID + "/" + m.RefName(seg.Ref)
		for _, e := range SegmentEntries(t, src, seg) {
			out[name] = append(out[name], fmt.Sprintf("%x|%x|%x|%x|%d", e.Key, e.Namespace, e.MapKey, e.Value, e.Timestamp))
		}
	}
	for _, v := range out {
		// Stable: the entries of one (key, namespace) keep their order.
		slices.SortStableFunc(v, func(a, b string) int { return cmp.Compare(keyAndNamespace(a), keyAndNamespace(b)) })
	}
	return out
}

// keyAndNamespace is the key and namespace of an entry string of Contents.
func keyAndNamespace(s string) string {
	i := strings.IndexByte(s, '|')
	j := strings.IndexByte(s[i+1:], '|')
	return s[:i+1+j]
}

// EqualKeyedState fails the test unless two savepoints hold the same keyed
// state and timers, and the same broadcast state.
func EqualKeyedState(t testing.TB, a, b savepoint.Source) {
	t.Helper()
	sa, sb := KeyedState(t, a), KeyedState(t, b)
	for name, ea := range sa {
		eb, ok := sb[name]
		if !ok {
			t.Errorf("%s: only in the first savepoint", name)
			continue
		}
		if len(ea) != len(eb) {
			t.Errorf("%s: %d entries, the other savepoint has %d", name, len(ea), len(eb))
			continue
		}
		for i := range ea {
			if !equalEntry(ea[i], eb[i]) {
				t.Errorf("%s: entry %d differs: %+v and %+v", name, i, ea[i], eb[i])
				break
			}
		}
	}
	for name := range sb {
		if _, ok := sa[name]; !ok {
			t.Errorf("%s: only in the second savepoint", name)
		}
	}
	for _, opA := range a.Metadata().Operators {
		opB, ok := b.Metadata().Operator(opA.UID)
		if !ok {
			continue
		}
		for i, bs := range opA.BroadcastStates {
			if i >= len(opB.BroadcastStates) || !slices.EqualFunc(bs.Entries, opB.BroadcastStates[i].Entries, func(x, y savepoint.BroadcastEntry) bool {
				return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Value, y.Value)
			}) {
				t.Errorf("%s: broadcast state %q differs", opA.UID, bs.Name)
			}
		}
	}
}

func equalEntry(a, b savepoint.Entry) bool {
	return bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Namespace, b.Namespace) && bytes.Equal(a.MapKey, b.MapKey) &&
		bytes.Equal(a.Value, b.Value) && a.Timestamp == b.Timestamp
}

// OperatorSegments returns the segments of operator op, sorted by key group
// and then ref, as the index lists them.
func OperatorSegments(t testing.TB, src savepoint.Source, op int) []savepoint.Segment {
	t.Helper()
	var out []savepoint.Segment
	for _, ref := range src.Metadata().Refs(op) {
		out = append(out, Segments(t, src, ref)...)
	}
	slices.SortStableFunc(out, func(a, b savepoint.Segment) int {
		return cmp.Or(cmp.Compare(a.KeyGroup, b.KeyGroup), a.Ref.Compare(b.Ref))
	})
	return out
}

// Verify reads every segment of src to its end, which checks every rule
// of its layout, and returns the first problem.
func Verify(src savepoint.Source) error {
	ctx := context.Background()
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return err
	}
	for _, seg := range segs {
		it := savepoint.SegmentEntries(ctx, src, seg)
		for it.Next() {
		}
		err := it.Err()
		it.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// DataFile returns the path of the data file of the savepoint in dir that
// was created as name, whatever its content suffix.
func DataFile(t testing.TB, dir, name string) string {
	t.Helper()
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var found []string
	for _, f := range r.DataFiles() {
		if snapshotfmt.GivenName(f) == name {
			found = append(found, f)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: data files created as %s: %v, want one", dir, name, found)
	}
	return filepath.Join(dir, filepath.FromSlash(found[0]))
}

// Iter iterates entries held in memory, as a source in any order would give
// them.
func Iter(es []savepoint.Entry) savepoint.EntryIterator { return &sliceIter{es: es, i: -1} }

type sliceIter struct {
	es []savepoint.Entry
	i  int
}

func (it *sliceIter) Next() bool              { it.i++; return it.i < len(it.es) }
func (it *sliceIter) Entry() *savepoint.Entry { return &it.es[it.i] }
func (it *sliceIter) Err() error              { return nil }
func (it *sliceIter) Close() error            { return nil }
