package flinkrewrite

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/golang/snappy"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// fixtures returns the directories of Flink's own savepoints listed in
// inventory.tsv, beside the module root, or skips the test.
func fixtures(t testing.TB) []string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "flink-savepoints")
	b, err := os.ReadFile(filepath.Join(root, "inventory.tsv"))
	if err != nil {
		t.Skipf("Flink savepoints not found at %s (../shared/flink-savepoints from the module root): %v", root, err)
	}
	var dirs []string
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Split(line, "\t"); i > 0 && len(f) > 0 {
			dirs = append(dirs, filepath.Join(root, strings.TrimSuffix(f[0], "/_metadata")))
		}
	}
	return dirs
}

func open(t testing.TB, dir string) *flinkfmt.Reader {
	t.Helper()
	r, err := flinkfmt.Open(context.Background(), storage.LocalDir(dir), flinkfmt.Options{})
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return r
}

// staged is an output staged in a test's temporary directory.
type staged struct {
	storage.Target
	target string
}

func stage(t testing.TB) *staged {
	t.Helper()
	target := filepath.Join(t.TempDir(), "out")
	st, err := storage.Stage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	return &staged{st, target}
}

func (s *staged) publish(t testing.TB) string {
	t.Helper()
	if err := s.Publish(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s.target
}

// contents is what a savepoint holds, as multisets: per operator id and
// state name, its entries encoded as text and sorted; and its operator
// states, element by element.
type contents struct {
	keyed    map[string][]string
	operator map[string][]string
	// entries counts the keyed entries, hashed the keys whose key group was
	// checked against Flink's hash.
	entries, hashed int
}

// readBack reads every entry of every operator of the savepoint in dir with
// the reader, decodes every key, namespace, map key and value with the
// serializers its headers restore, and checks that every key whose hash
// Flink defines by value sits in the key group that hash gives it.
func readBack(t testing.TB, dir string) *contents {
	t.Helper()
	ctx := context.Background()
	r := open(t, dir)
	c := &contents{keyed: map[string][]string{}, operator: map[string][]string{}}
	for _, op := range r.Metadata().Operators {
		k, err := r.Keyed(ctx, op)
		switch {
		case errors.Is(err, flinkfmt.ErrNotKeyed):
		case err != nil:
			t.Fatalf("%s: operator %s: %v", dir, op.ID, err)
		default:
			c.readKeyed(t, dir, k)
		}
		states, _, err := r.OperatorStates(ctx, op)
		if err != nil {
			t.Fatalf("%s: operator %s: %v", dir, op.ID, err)
		}
		for _, s := range states {
			id := op.ID.String() + "/" + s.Name
			for _, sub := range s.Subtasks {
				for _, e := range sub.Elements {
					c.operator[id] = append(c.operator[id], hex.EncodeToString(e))
				}
			}
			for _, e := range s.Entries {
				c.operator[id] = append(c.operator[id], hex.EncodeToString(e.Key)+"="+hex.EncodeToString(e.Value))
			}
		}
	}
	for _, l := range c.operator {
		sort.Strings(l)
	}
	for _, l := range c.keyed {
		sort.Strings(l)
	}
	return c
}

func (c *contents) readKeyed(t testing.TB, dir string, k *flinkfmt.Keyed) {
	t.Helper()
	op := k.Operator
	hashable := k.Key != nil && keyhash.Hashable(k.Key) == nil
	it := k.Entries(context.Background(), -1, keygroup.All(op.MaxParallelism))
	for it.Next() {
		e := it.Entry()
		m := k.States[e.State]
		c.entries++
		decode := func(what string, s interface{ Decode([]byte) (any, error) }, b []byte) {
			if _, err := s.Decode(b); err != nil {
				t.Fatalf("%s: operator %s state %s: %s % x: %v", dir, op.ID, m.Name, what, b, err)
			}
		}
		decode("key", k.Key, e.Key)
		if m.Kind == flinkfmt.Timers {
			decode("namespace", m.Value.Args[1], e.Namespace)
		} else {
			decode("namespace", m.Namespace, e.Namespace)
			if m.MapKey != nil {
				decode("map key", m.MapKey, e.MapKey)
			}
			if !e.Null {
				decode("value", m.Stored, e.Value)
			}
		}
		if hashable {
			kg, err := keyhash.KeyGroupOf(k.Key, e.Key, op.MaxParallelism)
			if err != nil || kg != e.KeyGroup {
				t.Fatalf("%s: operator %s state %s: key % x in key group %d hashes to %d (%v)", dir, op.ID, m.Name, e.Key, e.KeyGroup, kg, err)
			}
			c.hashed++
		}
		id := op.ID.String() + "/" + m.Name
		c.keyed[id] = append(c.keyed[id], fmt.Sprintf("%x|%x|%x|%x|%d|%v", e.Key, e.Namespace, e.MapKey, e.Value, e.Timestamp, e.Null))
	}
	if err := it.Err(); err != nil {
		t.Fatalf("%s: operator %s: %v", dir, op.ID, err)
	}
}

// equal reports the first difference between two savepoints' contents.
func (c *contents) diff(o *contents) string {
	for _, pair := range []struct {
		name string
		a, b map[string][]string
	}{{"keyed state", c.keyed, o.keyed}, {"operator state", c.operator, o.operator}} {
		for id, l := range pair.a {
			if !slices.Equal(l, pair.b[id]) {
				return fmt.Sprintf("%s %s: %d entries, and %d", pair.name, id, len(l), len(pair.b[id]))
			}
		}
		for id := range pair.b {
			if _, ok := pair.a[id]; !ok {
				return fmt.Sprintf("%s %s only in the second", pair.name, id)
			}
		}
	}
	return ""
}

var snappyMagic = []byte{0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'}

// streamOf returns the bytes of a stream handle of the savepoint in dir:
// inline, or a relative file.
func streamOf(t testing.TB, dir string, s *flinkfmt.StreamHandle) []byte {
	t.Helper()
	switch s.Kind {
	case flinkfmt.StreamInline:
		return s.Data
	case flinkfmt.StreamRelativeFile:
		b, err := os.ReadFile(filepath.Join(dir, s.Name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("%s: a %s stream", dir, s.Kind)
	return nil
}

// keyGroupBytes returns, for each key group of a key-group handle with
// data, its bytes, decompressed when they are a Snappy stream: read
// without the reader, from the offsets alone.
func keyGroupBytes(t testing.TB, dir string, h *flinkfmt.KeyedHandle) (header []byte, kgs map[int][]byte) {
	t.Helper()
	b := streamOf(t, dir, h.Stream)
	ends := slices.Clone(h.Offsets)
	slices.Sort(ends)
	kgs = map[int][]byte{}
	first := int64(len(b))
	for i, off := range h.Offsets {
		if off == 0 {
			continue
		}
		first = min(first, off)
		end := int64(len(b))
		if j, ok := slices.BinarySearch(ends, off); ok && j+1 < len(ends) {
			end = ends[j+1]
		}
		kg := b[off:end]
		if bytes.HasPrefix(kg, snappyMagic) {
			plain, err := io.ReadAll(snappy.NewReader(bytes.NewReader(kg)))
			if err != nil {
				t.Fatalf("%s: key group %d: %v", dir, h.KeyGroups.Start+i, err)
			}
			kg = plain
		}
		kgs[h.KeyGroups.Start+i] = kg
	}
	return b[:first], kgs
}
