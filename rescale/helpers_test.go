package rescale_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// open opens and verifies the savepoint in dir.
func open(t testing.TB, dir string) *snapshotfmt.Reader {
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

// contents lists the entries of every keyed state and timer service by
// "uid/name", each entry as a string, in the order they are read; sorted
// by key and namespace, they are comparable between savepoints of any max
// parallelism (within a key, the read order is the state's own order).
func contents(t testing.TB, r *snapshotfmt.Reader) map[string][]string {
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
			it := r.Entries(context.Background(), seg)
			for it.Next() {
				e := it.Entry()
				out[name] = append(out[name], fmt.Sprintf("%x|%x|%x|%x|%d", e.Key, e.Namespace, e.MapKey, e.Value, e.Timestamp))
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			it.Close()
		}
	}
	for k, v := range out {
		// Stable: the entries of one (key, namespace) keep their order.
		slices.SortStableFunc(v, func(a, b string) int { return cmp.Compare(keyPart(a), keyPart(b)) })
		out[k] = v
	}
	return out
}

// keyPart is the key and namespace of an entry string.
func keyPart(s string) string {
	i := strings.IndexByte(s, '|')
	j := strings.IndexByte(s[i+1:], '|')
	return s[:i+1+j]
}

// files returns the bytes of every file in dir, by name.
func files(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// counts sums entries per "uid/ref" from reading the data, timers included.
func counts(t testing.TB, r *snapshotfmt.Reader) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for k, v := range contents(t, r) {
		out[k] = uint64(len(v))
	}
	return out
}
