package snapshotfmt

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
)

// frameItem frames an entry's item as a reader finds it in a record.
func frameItem(isMap bool, e *savepoint.Entry) []byte {
	var b []byte
	if isMap {
		b = appendBytes(b, e.MapKey)
	}
	return appendBytes(b, e.Value)
}

// TestAppendItemsWritesWhatAddWrites writes the same entries through Add
// and through AppendItems, in blocks small enough that records split
// between blocks, and wants the same files byte for byte.
func TestAppendItemsWritesWhatAddWrites(t *testing.T) {
	ctx := context.Background()
	meta := testMeta()
	data := testData(300)
	for _, blockSize := range []int{64, 256, DefaultBlockSize} {
		opts := Options{BlockSize: blockSize}
		want := newMemDir()
		writeSavepoint(t, want, meta, data, opts)

		got := newMemDir()
		w, err := NewWriter(got, meta, opts)
		if err != nil {
			t.Fatal(err)
		}
		files := make([]*DataFileWriter, 2)
		for i := range files {
			if files[i], err = w.CreateDataFile(ctx, []string{"data-000", "data-001"}[i]); err != nil {
				t.Fatal(err)
			}
		}
		for _, sd := range data {
			f := files[sd.kg%2]
			ref := flatRef(meta, sd.op, sd.ref)
			s, err := f.Segment(ref, sd.kg)
			if err != nil {
				t.Fatal(err)
			}
			isMap := !ref.Timer && meta.Operators[ref.Operator].States[ref.State].Kind == savepoint.Map
			if ref.Timer {
				for i := range sd.entries {
					if err := s.Add(&sd.entries[i]); err != nil {
						t.Fatalf("block size %d, %v entry %d: %v", blockSize, ref, i, err)
					}
				}
			}
			// The entries of one key and namespace go in pieces of one to
			// three items, as a writer does whose pieces of one key's
			// entries come in several calls.
			for i, piece := 0, 1; i < len(sd.entries) && !ref.Timer; piece = piece%3 + 1 {
				e := &sd.entries[i]
				var items []byte
				j := i
				for ; j < len(sd.entries) && j < i+piece && bytes.Equal(sd.entries[j].Key, e.Key) && bytes.Equal(sd.entries[j].Namespace, e.Namespace); j++ {
					items = append(items, frameItem(isMap, &sd.entries[j])...)
				}
				n, err := s.AppendItems(e.Key, e.Namespace, items)
				if err != nil || n != j-i {
					t.Fatalf("block size %d, %v entries %d to %d: appended %d, %v", blockSize, ref, i, j, n, err)
				}
				i = j
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range files {
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(slices.Sorted(maps.Keys(got.files)), slices.Sorted(maps.Keys(want.files))) {
			t.Fatalf("block size %d: files %v, want %v", blockSize, slices.Sorted(maps.Keys(got.files)), slices.Sorted(maps.Keys(want.files)))
		}
		for name, b := range want.files {
			if !bytes.Equal(got.files[name], b) {
				t.Errorf("block size %d: %s differs from what Add writes", blockSize, name)
			}
		}
	}
}

func TestAppendItemsRefusesBadEntries(t *testing.T) {
	ctx := context.Background()
	const kg = 5
	k := keysIn(kg, 3, 16)
	other := keysIn(kg+1, 1, 16)[0]
	v := func(s string) []byte { return append(ts(1), s...) }
	item := func(vs ...[]byte) []byte {
		var b []byte
		for _, v := range vs {
			b = appendBytes(b, v)
		}
		return b
	}
	type call struct {
		key, items []byte
	}
	for _, tc := range []struct {
		name  string
		ref   int
		calls []call
		// appended is what the last call appends before it fails.
		appended int
		want     string
	}{
		{"key decreases", 1, []call{{k[1], item([]byte("x"))}, {k[0], item([]byte("y"))}}, 0, "comes before the previous one"},
		{"value duplicate", 0, []call{{k[0], item(v("a"))}, {k[0], item(v("b"))}}, 0, "a second entry"},
		{"value of two items", 0, []call{{k[0], item(v("a"), v("b"))}}, 1, "a second entry"},
		{"ttl value short", 0, []call{{k[0], item([]byte("short"))}}, 0, "shorter than its 8-byte"},
		{"key of another key group", 1, []call{{other, item([]byte("x"))}}, 0, "belongs to key group"},
		{"timer service", 4, []call{{k[0], item(nil)}}, 0, "cannot be appended framed"},
		{"no items", 1, []call{{k[0], nil}}, 0, "no items"},
		{"value beyond the items", 1, []call{{k[0], append(item([]byte("x"), []byte("y")), 5, 'z')}}, 2, "bad value length"},
		{"bad map key length", 2, []call{{k[0], []byte{0x80}}}, 0, "bad map key length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(newMemDir(), testMeta(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			f, _ := w.CreateDataFile(ctx, "data")
			s, err := f.Segment(flatRef(f.w.meta, 0, tc.ref), kg)
			if err != nil {
				t.Fatal(err)
			}
			last := len(tc.calls) - 1
			var n int
			for i, c := range tc.calls {
				n, err = s.AppendItems(c.key, nil, c.items)
				if i < last && err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if n != tc.appended {
				t.Errorf("appended %d entries, want %d", n, tc.appended)
			}
			if !strings.Contains(err.Error(), "key group 5") {
				t.Errorf("error %q does not say where", err)
			}
		})
	}
	t.Run("mixed with Add", func(t *testing.T) {
		w, _ := NewWriter(newMemDir(), testMeta(), Options{})
		f, _ := w.CreateDataFile(ctx, "data")
		s, _ := f.Segment(flatRef(f.w.meta, 0, 1), kg)
		if err := s.Add(&savepoint.Entry{Key: k[0], Value: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendItems(k[1], nil, item([]byte("y"))); err == nil || !strings.Contains(err.Error(), "after Add") {
			t.Fatalf("got %v", err)
		}
	})
}
