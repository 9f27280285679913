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

// TestAppendFramedWritesWhatAddWrites writes the same entries through Add
// and through AppendFramed, in blocks small enough that records split
// between blocks, and wants the same files byte for byte.
func TestAppendFramedWritesWhatAddWrites(t *testing.T) {
	ctx := context.Background()
	meta := testMeta()
	data := testData(300)
	for _, blockSize := range []int{256, DefaultBlockSize} {
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
			for i := range sd.entries {
				e := &sd.entries[i]
				if ref.Timer {
					err = s.Add(e)
				} else {
					// Every third continuation is announced as a new record
					// of the same key, as a writer does whose pieces of one
					// key's entries come in several calls.
					newRecord := i == 0 || !bytes.Equal(e.Key, sd.entries[i-1].Key) ||
						!bytes.Equal(e.Namespace, sd.entries[i-1].Namespace) || i%3 == 0
					err = s.AppendFramed(newRecord, e.Key, e.Namespace, frameItem(isMap, e), e.Value)
				}
				if err != nil {
					t.Fatalf("block size %d, %v entry %d: %v", blockSize, ref, i, err)
				}
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

func TestAppendFramedRefusesBadEntries(t *testing.T) {
	ctx := context.Background()
	const kg = 5
	k := keysIn(kg, 3, 16)
	other := keysIn(kg+1, 1, 16)[0]
	v := func(s string) []byte { return append(ts(1), s...) }
	type call struct {
		newRecord bool
		key       []byte
		value     []byte
	}
	for _, tc := range []struct {
		name  string
		ref   int
		calls []call
		want  string
	}{
		{"key decreases", 1, []call{{true, k[1], []byte("x")}, {true, k[0], []byte("y")}}, "comes before the previous one"},
		{"value duplicate", 0, []call{{true, k[0], v("a")}, {true, k[0], v("b")}}, "a second entry"},
		{"value continued", 0, []call{{true, k[0], v("a")}, {false, nil, v("b")}}, "a second entry"},
		{"ttl value short", 0, []call{{true, k[0], []byte("short")}}, "shorter than its 8-byte"},
		{"key of another key group", 1, []call{{true, other, []byte("x")}}, "belongs to key group"},
		{"timer service", 4, []call{{true, k[0], nil}}, "cannot be appended framed"},
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
			for i, c := range tc.calls {
				err = s.AppendFramed(c.newRecord, c.key, nil, appendBytes(nil, c.value), c.value)
				if i < last && err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
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
		if err := s.AppendFramed(true, k[1], nil, appendBytes(nil, []byte("y")), []byte("y")); err == nil || !strings.Contains(err.Error(), "after Add") {
			t.Fatalf("got %v", err)
		}
	})
}
