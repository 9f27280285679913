// Package sptest reads savepoints in the example jobs' tests: the decoded
// entries of one state or timer service, and the files of a savepoint
// directory for byte-for-byte comparisons.
package sptest

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
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
			return read(t, r, idx, i, op.MaxParallelism)
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
			return read(t, r, idx, len(op.States)+i, op.MaxParallelism)
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

func read(t testing.TB, r *snapshotfmt.Reader, op, ref, maxP int) []savepoint.Entry {
	t.Helper()
	var out []savepoint.Entry
	for _, seg := range r.StateSegments(op, ref, keygroup.All(maxP)) {
		it := r.Entries(context.Background(), seg)
		for it.Next() {
			e := it.Entry()
			out = append(out, savepoint.Entry{Key: bytes.Clone(e.Key), Namespace: bytes.Clone(e.Namespace),
				MapKey: bytes.Clone(e.MapKey), Value: bytes.Clone(e.Value), Timestamp: e.Timestamp})
		}
		err := it.Err()
		it.Close()
		if err != nil {
			t.Fatal(err)
		}
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

// Files returns the contents of every file under dir, by slash-separated
// relative path.
func Files(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// SameFiles fails the test unless dirs a and b hold the same files with the
// same bytes.
func SameFiles(t testing.TB, a, b string) {
	t.Helper()
	fa, fb := Files(t, a), Files(t, b)
	if len(fa) == 0 {
		t.Fatalf("%s is empty", a)
	}
	for name, ba := range fa {
		bb, ok := fb[name]
		switch {
		case !ok:
			t.Errorf("%s is in %s but not in %s", name, a, b)
		case !bytes.Equal(ba, bb):
			t.Errorf("%s differs between %s and %s (%d and %d bytes)", name, a, b, len(ba), len(bb))
		}
	}
	for name := range fb {
		if _, ok := fa[name]; !ok {
			t.Errorf("%s is in %s but not in %s", name, b, a)
		}
	}
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
			out[op.UID+"/"+s.Name] = read(t, r, i, ref, op.MaxParallelism)
		}
		for j, s := range op.Timers {
			out[op.UID+"/"+s.Name] = read(t, r, i, len(op.States)+j, op.MaxParallelism)
		}
	}
	return out
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
