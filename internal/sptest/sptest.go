package sptest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
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
	if err := r.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// Entries returns every entry of keyed state name of operator uid, in key
// group order, with its bytes copied.
func Entries(t testing.TB, r *snapshotfmt.Reader, uid, name string) []savepoint.Entry {
	t.Helper()
	op, idx := operator(t, r, uid)
	for i, s := range op.States {
		if s.Name == name {
			return EntriesAt(t, r, idx, i)
		}
	}
	t.Fatalf("operator %q has no state %q", uid, name)
	return nil
}

// Timers returns every timer of timer service name of operator uid.
func Timers(t testing.TB, r *snapshotfmt.Reader, uid, name string) []savepoint.Entry {
	t.Helper()
	op, idx := operator(t, r, uid)
	for i, s := range op.Timers {
		if s.Name == name {
			return EntriesAt(t, r, idx, len(op.States)+i)
		}
	}
	t.Fatalf("operator %q has no timer service %q", uid, name)
	return nil
}

func operator(t testing.TB, r *snapshotfmt.Reader, uid string) (*savepoint.Operator, int) {
	t.Helper()
	ops := r.Metadata().Operators
	for i := range ops {
		if ops[i].UID == uid {
			return &ops[i], i
		}
	}
	t.Fatalf("the savepoint has no operator %q", uid)
	return nil, 0
}

// Segments returns the segments of the state (or timer service) ref of the
// operator at index op, in key-group order. Refs number the states, then
// the timer services.
func Segments(r *snapshotfmt.Reader, op, ref int) []snapshotfmt.Segment {
	return r.StateSegments(op, ref, keygroup.All(r.Metadata().Operators[op].MaxParallelism))
}

// EntriesAt returns every entry of the state (or timer service) ref of the
// operator at index op, in key-group order, with its bytes copied.
func EntriesAt(t testing.TB, r *snapshotfmt.Reader, op, ref int) []savepoint.Entry {
	t.Helper()
	var out []savepoint.Entry
	for _, seg := range Segments(r, op, ref) {
		out = append(out, SegmentEntries(t, r, seg)...)
	}
	return out
}

// SegmentEntries returns the entries of one segment, with their bytes
// copied.
func SegmentEntries(t testing.TB, r *snapshotfmt.Reader, seg snapshotfmt.Segment) []savepoint.Entry {
	t.Helper()
	var out []savepoint.Entry
	it := r.Entries(context.Background(), seg)
	defer it.Close()
	for it.Next() {
		e := it.Entry()
		out = append(out, savepoint.Entry{Key: bytes.Clone(e.Key), Namespace: bytes.Clone(e.Namespace),
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
func KeyedState(t testing.TB, r *snapshotfmt.Reader) map[string][]savepoint.Entry {
	t.Helper()
	out := map[string][]savepoint.Entry{}
	for i, op := range r.Metadata().Operators {
		for ref, s := range op.States {
			out[op.UID+"/"+s.Name] = EntriesAt(t, r, i, ref)
		}
		for j, s := range op.Timers {
			out[op.UID+"/"+s.Name] = EntriesAt(t, r, i, len(op.States)+j)
		}
	}
	return out
}

// Contents lists the entries of every keyed state and timer service by
// "uid/name", each entry as a string, sorted by key and namespace; within
// a key and namespace, entries keep the state's own order (a list's, say).
// Unlike KeyedState, the lists are comparable between savepoints of any max
// parallelism.
func Contents(t testing.TB, r *snapshotfmt.Reader) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	m := r.Metadata()
	for oi := range m.Operators {
		op := &m.Operators[oi]
		for _, seg := range r.Segments(oi) {
			name := op.UID + "/"
			if seg.Ref < len(op.States) {
				name += op.States[seg.Ref].Name
			} else {
				name += op.Timers[seg.Ref-len(op.States)].Name
			}
			for _, e := range SegmentEntries(t, r, seg) {
				out[name] = append(out[name], fmt.Sprintf("%x|%x|%x|%x|%d", e.Key, e.Namespace, e.MapKey, e.Value, e.Timestamp))
			}
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
func EqualKeyedState(t testing.TB, a, b *snapshotfmt.Reader) {
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
