package snapshotfmt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/storage"
	"github.com/zeebo/xxh3"
)

// keysIn returns n sorted keys of key group kg at max parallelism maxP.
func keysIn(kg, n, maxP int) [][]byte {
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := fmt.Sprintf("k%d", i); keygroup.Of([]byte(k), maxP) == kg {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	keys := make([][]byte, n)
	for i, k := range out {
		keys[i] = []byte(k)
	}
	return keys
}

func TestWriterRefusesBadEntries(t *testing.T) {
	ctx := context.Background()
	const kg = 5
	k := keysIn(kg, 3, 16)
	other := keysIn(kg+1, 1, 16)[0]
	v := func(s string) []byte { return append(ts(1), s...) } // TTL values
	for _, tc := range []struct {
		name    string
		ref     int
		entries []savepoint.Entry
		want    string // in the error of the last entry
	}{
		{"value key decreases", 0, []savepoint.Entry{{Key: k[1], Value: v("a")}, {Key: k[0], Value: v("b")}}, "comes before the previous one"},
		{"value duplicate", 0, []savepoint.Entry{{Key: k[0], Value: v("a")}, {Key: k[0], Value: v("b")}}, "a second entry"},
		{"value namespace decreases", 3, []savepoint.Entry{{Key: k[0], Namespace: window(2, 3), Value: ts(1)}, {Key: k[0], Namespace: window(1, 2), Value: ts(1)}}, "comes before the previous one"},
		{"ttl value short", 0, []savepoint.Entry{{Key: k[0], Value: []byte("short")}}, "shorter than its 8-byte"},
		{"map key on value state", 0, []savepoint.Entry{{Key: k[0], MapKey: []byte("m"), Value: v("a")}}, "has a map key"},
		{"timestamp on state", 1, []savepoint.Entry{{Key: k[0], Value: []byte("x"), Timestamp: 5}}, "timer timestamp"},
		{"list key decreases", 1, []savepoint.Entry{{Key: k[1], Value: []byte("x")}, {Key: k[1], Value: []byte("y")}, {Key: k[0], Value: []byte("z")}}, "comes before"},
		{"map key repeats", 2, []savepoint.Entry{{Key: k[0], MapKey: []byte("a"), Value: v("1")}, {Key: k[0], MapKey: []byte("a"), Value: v("2")}}, "strictly increasing"},
		{"map key decreases", 2, []savepoint.Entry{{Key: k[0], MapKey: []byte("b"), Value: v("1")}, {Key: k[0], MapKey: []byte("a"), Value: v("2")}}, "strictly increasing"},
		{"timer time decreases", 4, []savepoint.Entry{{Key: k[0], Timestamp: 10}, {Key: k[1], Timestamp: 9}}, "not after the previous one"},
		{"timer duplicate", 4, []savepoint.Entry{{Key: k[0], Timestamp: 10}, {Key: k[0], Timestamp: 10}}, "not after the previous one"},
		{"timer with value", 4, []savepoint.Entry{{Key: k[0], Timestamp: 10, Value: []byte{1}}}, "has a map key or a value"},
		{"key of another key group", 1, []savepoint.Entry{{Key: other, Value: []byte("x")}}, "belongs to key group"},
		{"timer key of another key group", 4, []savepoint.Entry{{Key: other, Timestamp: 1}}, "belongs to key group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newMemDir()
			w, err := NewWriter(d, testMeta(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			f, _ := w.CreateDataFile(ctx, "data")
			s, err := f.Segment(flatRef(f.w.meta, 0, tc.ref), kg)
			if err != nil {
				t.Fatal(err)
			}
			last := len(tc.entries) - 1
			for i := range last {
				if err := s.Add(&tc.entries[i]); err != nil {
					t.Fatalf("entry %d: %v", i, err)
				}
			}
			err = s.Add(&tc.entries[last])
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Add = %v, want an error containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "key group 5") {
				t.Errorf("error %q does not name the key group", err)
			}
			// A refused entry changes nothing: the segment still reads back.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Finish(ctx); err != nil {
				t.Fatal(err)
			}
			r, err := Open(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if err := verify(ctx, r); err != nil {
				t.Fatal(err)
			}
			got := readAll(t, r, 0)
			n := 0
			for _, sd := range got {
				n += len(sd.entries)
			}
			if n != last {
				t.Fatalf("read back %d entries, want %d", n, last)
			}
		})
	}
}

func TestWriterMisuse(t *testing.T) {
	ctx := context.Background()
	d := newMemDir()
	w, err := NewWriter(d, testMeta(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../x", "/etc/passwd", MetadataName, "a//b", ""} {
		if _, err := w.CreateDataFile(ctx, name); !errors.Is(err, storage.ErrBadName) {
			t.Errorf("CreateDataFile(%q) = %v, want ErrBadName", name, err)
		}
	}
	f, err := w.CreateDataFile(ctx, "data")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.CreateDataFile(ctx, "data"); err == nil {
		t.Error("a data file created twice")
	}
	for _, c := range [][3]int{{1, 0, 0}, {2, 0, 0}, {0, 5, 0}, {0, 0, 16}, {0, -1, 0}} {
		if _, err := f.Segment(flatRef(f.w.meta, c[0], c[1]), c[2]); err == nil {
			t.Errorf("Segment%v accepted", c)
		}
	}
	s, err := f.Segment(flatRef(f.w.meta, 0, 0), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Segment(flatRef(f.w.meta, 0, 1), 1); err == nil {
		t.Error("two open segments in one file")
	}
	s.Close()
	if _, err := f.Segment(flatRef(f.w.meta, 0, 0), 1); err == nil {
		t.Error("the same segment written twice")
	}
	if err := w.Finish(ctx); err == nil || !strings.Contains(err.Error(), "not closed") {
		t.Errorf("Finish with an open data file = %v", err)
	}
	if _, err := f.Segment(flatRef(f.w.meta, 0, 1), 2); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err == nil {
		t.Error("closing a file with an open segment succeeded")
	}
	if err := w.Finish(ctx); err == nil {
		t.Error("Finish with a failed data file succeeded")
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if len(d.files) != 0 {
		t.Errorf("Abort left %d files", len(d.files))
	}
}

func TestNewWriterChecksMetadata(t *testing.T) {
	deep := snap(serializers.KindInt32)
	for range maxSnapshotDepth {
		deep = snap(serializers.KindList, deep)
	}
	for _, tc := range []struct {
		name   string
		change func(m *savepoint.Metadata)
		want   string
	}{
		{"duplicate uid", func(m *savepoint.Metadata) { m.Operators[1].UID = "features" }, "two operators"},
		{"empty uid", func(m *savepoint.Metadata) { m.Operators[1].UID = "" }, "empty name"},
		{"parallelism above max", func(m *savepoint.Metadata) { m.Operators[0].Parallelism = 17 }, "above max parallelism"},
		{"max parallelism too big", func(m *savepoint.Metadata) { m.Operators[1].MaxParallelism = 40000 }, "outside"},
		{"duplicate state", func(m *savepoint.Metadata) { m.Operators[0].States[1].Name = "session" }, "two states"},
		{"bad avro", func(m *savepoint.Metadata) { m.Operators[0].States[0].Value.Schema = `{"type":"record"}` }, "avro schema does not parse"},
		{"schema on int", func(m *savepoint.Metadata) { m.Operators[0].States[3].Value.Schema = `"int"` }, "only avro"},
		{"list without element", func(m *savepoint.Metadata) { m.Operators[0].States[3].Value = snap(serializers.KindList) }, "nested serializers"},
		{"unknown serializer", func(m *savepoint.Metadata) { m.Operators[0].States[3].Value = snap("uuid") }, "unknown serializer"},
		{"too deep", func(m *savepoint.Metadata) { m.Operators[0].States[3].Value = deep }, "deeper than 32"},
		{"sub-millisecond TTL", func(m *savepoint.Metadata) { m.Operators[0].States[0].TTL.TTL = 1500 * time.Microsecond }, "whole number of milliseconds"},
		{"map key on list", func(m *savepoint.Metadata) { m.Operators[0].States[1].MapKey = snap(serializers.KindString) }, "map-key serializer"},
		{"map without map key", func(m *savepoint.Metadata) { m.Operators[0].States[2].MapKey = serializers.Snapshot{} }, "map-key serializer"},
		{"unknown kind", func(m *savepoint.Metadata) { m.Operators[0].States[1].Kind = 9 }, "unknown kind"},
		{"non-keyed with states", func(m *savepoint.Metadata) { m.Operators[1].States = m.Operators[0].States }, "non-keyed"},
		{"key without hash", func(m *savepoint.Metadata) { m.Operators[0].KeyHash = 0 }, "without a key hash"},
		{"subtasks", func(m *savepoint.Metadata) { m.Operators[1].OperatorStates[0].Subtasks = nil }, "lists 0 subtasks"},
		{"distribution", func(m *savepoint.Metadata) { m.Operators[1].OperatorStates[0].Distribution = 3 }, "unknown distribution"},
		{"broadcast order", func(m *savepoint.Metadata) {
			e := m.Operators[0].BroadcastStates[0].Entries
			e[0], e[1] = e[1], e[0]
		}, "not strictly increasing"},
		{"invalid UTF-8 name", func(m *savepoint.Metadata) { m.Operators[0].Timers[0].Name = "\xff" }, "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testMeta()
			tc.change(m)
			_, err := NewWriter(newMemDir(), m, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewWriter = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := NewWriter(newMemDir(), testMeta(), Options{BlockSize: -1}); err == nil {
		t.Error("negative block size accepted")
	}
	if _, err := NewWriter(newMemDir(), testMeta(), Options{Compression: 7}); err == nil {
		t.Error("unknown codec accepted")
	}
}

// Data files are named after their bytes: the name given, with the 16 hex
// digits of the XXH3-64 of the file before its extension, a content
// suffix the name had already replaced.
func TestDataFilesAreNamedByContent(t *testing.T) {
	for _, tc := range []struct{ given, stem, ext string }{
		{"data-000", "data-000", ""},
		{"op001-00000.data", "op001-00000", ".data"},
		{"op001-00000-0123456789abcdef.data", "op001-00000", ".data"},
		{"sub/op001-00000-0123456789abcdef.data", "sub/op001-00000", ".data"},
		{"op001-00000-0123456789ABCDEF.data", "op001-00000-0123456789ABCDEF", ".data"},
		{"x-0123456789abcde.data", "x-0123456789abcde", ".data"},
		{".hidden", ".hidden", ""},
	} {
		if stem, ext := dataFileStem(tc.given); stem != tc.stem || ext != tc.ext {
			t.Errorf("dataFileStem(%q) = %q, %q; want %q, %q", tc.given, stem, ext, tc.stem, tc.ext)
		}
	}
	ctx := context.Background()
	d := newMemDir()
	w, err := NewWriter(d, testMeta(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"op000-00000.data", "op000-00001-00000000deadbeef.data"} {
		f, err := w.CreateDataFile(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.CreateDataFile(ctx, "op000-00000-1111111111111111.data"); err == nil {
		t.Error("a second file of the same stem was created")
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var want []string
	for _, stem := range []string{"op000-00000", "op000-00001"} {
		var b []byte
		for name, data := range d.files {
			if strings.HasPrefix(name, stem+"-") {
				b = data
			}
		}
		want = append(want, fmt.Sprintf("%s-%016x.data", stem, xxh3.Hash(b)))
	}
	if got := r.DataFiles(); !slices.Equal(got, want) {
		t.Errorf("data files %v, want %v", got, want)
	}
}
