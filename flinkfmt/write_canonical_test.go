package flinkfmt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// Every key group of every canonical handle of the reference savepoints,
// read into entries, turned into pairs and written again under the
// handle's own header, gives the header and the key group's bytes back
// (decompressed, since Go's Snappy encoder is not xerial's).
func TestCanonicalWriterReproducesFixtures(t *testing.T) {
	root, rows := inventory(t)
	ctx := context.Background()
	var handles, keyGroups, compressed int
	for _, row := range rows {
		dir := filepath.Join(root, row.dir)
		r, err := Open(ctx, storage.LocalDir(dir), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(ctx, op)
			if errors.Is(err, ErrNotKeyed) || errors.Is(err, ErrUnsupported) {
				continue
			} else if err != nil {
				t.Fatalf("%s: %v", row.dir, err)
			}
			for p, part := range k.Parts() {
				if part.Layout != LayoutCanonical {
					continue
				}
				n, err := reproduceCanonical(ctx, k, p)
				if err != nil {
					t.Errorf("%s: operator %s subtask %d: %v", row.dir, op.ID, part.Subtask, err)
				}
				handles++
				keyGroups += n
				if k.subtasks[p].header.Compressed {
					compressed++
				}
			}
		}
	}
	t.Logf("%d canonical handles (%d compressed), %d key groups with data, reproduced", handles, compressed, keyGroups)
	if handles < 400 || compressed == 0 {
		t.Errorf("only %d canonical handles, %d compressed", handles, compressed)
	}
}

func reproduceCanonical(ctx context.Context, k *Keyed, p int) (int, error) {
	sk := k.subtasks[p]
	h, err := k.CanonicalHeader([]int{p})
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(h.Bytes, sk.header.raw) {
		return 0, errors.New("the header differs")
	}
	var out bytes.Buffer
	w, err := NewCanonicalWriter(&out, h, k.Operator.MaxParallelism, sk.handle.KeyGroups)
	if err != nil {
		return 0, err
	}
	var entries []Entry
	enc := k.PairEncoder()
	for kg := sk.handle.KeyGroups.Start; kg <= sk.handle.KeyGroups.End; kg++ {
		entries, _, err = k.ReadKeyGroup(ctx, p, kg, entries[:0])
		if err != nil {
			return 0, err
		}
		pairs := enc.Encode(entries)
		keys := map[string]bool{}
		for _, e := range entries {
			keys[string(e.Key)] = true
		}
		// The pairs as stored are the pairs rebuilt from the entries, and
		// UserKey finds the key in each.
		x := 0
		err = k.CanonicalKeyGroup(ctx, p, kg, func(state int, key, value []byte) error {
			if x >= len(pairs) || state != pairs[x].State || !bytes.Equal(key, pairs[x].Key) || !bytes.Equal(value, pairs[x].Value) {
				return fmt.Errorf("stored pair %d differs from the one rebuilt", x)
			}
			uk, err := k.UserKey(state, key)
			if err != nil || !bytes.Equal(uk, pairs[x].UserKey) {
				return fmt.Errorf("pair %d: user key % x, want % x (%v)", x, uk, pairs[x].UserKey, err)
			}
			x++
			return nil
		})
		if err == nil && x != len(pairs) {
			err = fmt.Errorf("%d pairs stored, %d rebuilt", x, len(pairs))
		}
		if err != nil {
			return 0, fmt.Errorf("key group %d: %w", kg, err)
		}
		for _, pr := range pairs {
			if !keys[string(pr.UserKey)] {
				return 0, fmt.Errorf("key group %d: a pair's user key % x is no entry's key", kg, pr.UserKey)
			}
			if err := w.Add(kg, h.IDs[pr.State], pr.Key, pr.Value); err != nil {
				return 0, err
			}
		}
	}
	offsets, err := w.Finish()
	if err != nil {
		return 0, err
	}
	n := 0
	ends := slices.Clone(offsets)
	slices.Sort(ends)
	for i, off := range offsets {
		kg := sk.handle.KeyGroups.Start + i
		if (off == 0) != (sk.handle.Offsets[i] == 0) {
			return n, errors.New("a key group is empty in one stream only")
		}
		if off == 0 {
			continue
		}
		end := int64(out.Len())
		if j, ok := slices.BinarySearch(ends, off); ok && j+1 < len(ends) {
			end = ends[j+1]
		}
		got := out.Bytes()[off:end]
		if sk.header.Compressed {
			if got, err = unsnappy(got, 1<<30); err != nil {
				return n, err
			}
		}
		want, err := k.r.readKeyGroup(ctx, sk, i, kg, LayoutCanonical, nil, nil)
		if err != nil {
			return n, err
		}
		if !bytes.Equal(got, want.b) {
			return n, fmt.Errorf("key group %d differs", kg)
		}
		n++
	}
	return n, nil
}

// A savepoint built with the writer: String keys, one value state of
// longs, a pair in key group 5, the stream in a file of its own.
func writtenSavepoint(t *testing.T, dir string) []byte {
	t.Helper()
	void := SimpleSnapshot(VoidNamespaceClass)
	h, err := NewCanonicalHeader(SimpleSnapshot(StringSnapshotClass), false, []StateSpec{{Name: "v", Kind: Value, Namespace: void, Value: SimpleSnapshot(LongSnapshotClass)}})
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	w, err := NewCanonicalWriter(&stream, h, 128, keygroup.All(128))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(5, 0, []byte{4, 'k', 'e', 'y', 0}, []byte{0, 0, 0, 0, 0, 0, 0, 9}); err != nil {
		t.Fatal(err)
	}
	offsets, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	m := &Metadata{Version: 3, Operators: []*Operator{{Parallelism: 1, MaxParallelism: 128, Subtasks: []Subtask{{ManagedKeyed: &KeyedHandle{
		Kind: KeyedSavepointKeyGroups, KeyGroups: keygroup.All(128), Offsets: offsets,
		Stream: &StreamHandle{Kind: StreamRelativeFile, Name: "keyed", Size: int64(stream.Len())}}}}}}}
	b, err := EncodeMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, MetadataFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keyed"), stream.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return stream.Bytes()
}

// Reading pairs as stored checks their framing and key-group prefix, and
// locates what is wrong.
func TestCanonicalKeyGroupRefusesDamage(t *testing.T) {
	dir := t.TempDir()
	good := writtenSavepoint(t, dir)
	read := func() error {
		r, err := Open(context.Background(), storage.LocalDir(dir), Options{})
		if err != nil {
			t.Fatal(err)
		}
		k, err := r.Keyed(context.Background(), r.Metadata().Operators[0])
		if err != nil {
			t.Fatal(err)
		}
		return k.CanonicalKeyGroup(context.Background(), 0, 5, func(state int, key, value []byte) error {
			if uk, err := k.UserKey(state, key); err != nil || string(uk) != "\x04key" {
				t.Errorf("user key %q, %v", uk, err)
			}
			return nil
		})
	}
	if err := read(); err != nil {
		t.Fatal(err)
	}
	// The pair starts after the state id: its key length, then the prefix.
	at := len(good) - (2 + 4 + 6 + 4 + 8 + 2) + 2
	for name, damage := range map[string]func(b []byte) []byte{
		"prefix of another key group": func(b []byte) []byte { b[at+4] = 0x80 | 6; return b },
		"value past the end":          func(b []byte) []byte { b[at+4+6+3] = 99; return b },
		"no end mark":                 func(b []byte) []byte { return b[:len(b)-2] },
	} {
		b := damage(bytes.Clone(good))
		if err := os.WriteFile(filepath.Join(dir, "keyed"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		err := read()
		var fe *Error
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &fe) || fe.KeyGroup != 5 || fe.File != "keyed" {
			t.Errorf("%s: %v", name, err)
		}
	}
}
