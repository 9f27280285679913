package export_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/storage"
)

// oneState is a savepoint of one operator, "op" with string keys, whose
// value state "s" has the given value serializer and holds values.
func oneState(t *testing.T, value serializers.Snapshot, values ...[]byte) string {
	b := newBuilder(savepoint.Operator{
		UID: "op", Name: "Op", Parallelism: 1, MaxParallelism: 128, KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
		States: []savepoint.KeyedState{{Name: "s", Kind: savepoint.Value, Namespace: void, Value: value}},
	})
	for i, v := range values {
		b.add(0, 0, savepoint.Entry{Key: []byte{'k', byte('a' + i)}, Value: v})
	}
	return b.write(t)
}

// recordingStaging is a staging that remembers whether anything was
// created in it.
type recordingStaging struct {
	storage.Staging
	created []string
}

func (s *recordingStaging) Create(ctx context.Context, name string) (io.WriteCloser, error) {
	s.created = append(s.created, name)
	return s.Staging.Create(ctx, name)
}

func TestUnmappable(t *testing.T) {
	for _, c := range []struct {
		name  string
		value serializers.Snapshot
		msg   string
	}{
		{"recursive", avroSnap(`{"type":"record","name":"Node","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","Node"]}]}`),
			`operator "op" state "s": value.next: record Node contains itself, and an Arrow type cannot: no Arrow mapping`},
		{"empty record", avroSnap(`{"type":"record","name":"Nothing","fields":[]}`),
			`value: record Nothing has no fields, and Parquet has no empty group`},
		{"wide decimal", avroSnap(`{"type":"bytes","logicalType":"decimal","precision":80,"scale":2}`),
			`value: decimal(80,2): Arrow decimals hold 1 to 76 digits`},
		{"nullable map key", snap(serializers.KindMap, snap(serializers.KindNullable, snap(serializers.KindString)), snap(serializers.KindInt64)),
			`value: map key nullable<string> can be null, and Arrow map keys cannot`},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := oneState(t, c.value)
			r := openReader(t, sp)
			staging, err := storage.Stage(filepath.Join(t.TempDir(), "out"), false)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recordingStaging{Staging: staging}
			_, err = export.Run(context.Background(), r, rec, export.Options{})
			staging.Abort()
			if !errors.Is(err, export.ErrUnmappable) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %v, want ErrUnmappable saying %q", err, c.msg)
			}
			if len(rec.created) > 0 {
				t.Errorf("files written before the refusal: %v", rec.created)
			}
		})
	}
}

func TestUndecodable(t *testing.T) {
	rec := avroSnap(`{"type":"record","name":"R","fields":[{"name":"s","type":"string"},{"name":"n","type":{"type":"array","items":"long"}}]}`)
	for _, c := range []struct {
		name  string
		value serializers.Snapshot
		bytes []byte
		msg   string
	}{
		{"int64 of 3 bytes", snap(serializers.KindInt64), []byte{1, 2, 3}, "int64: want 8 bytes, got 3"},
		{"truncated string", rec, []byte{0x0a, 'a'}, "avro: string length 5 at byte 0 does not fit in the 1 bytes that remain"},
		{"huge array count", rec, []byte{0x02, 'a', 0xfe, 0xff, 0xff, 0xff, 0x0f}, "does not fit in the 0 bytes that remain"},
		{"trailing bytes", rec, []byte{0x02, 'a', 0x00, 0x00}, "avro: 1 trailing bytes after the datum"},
		{"invalid UTF-8", rec, []byte{0x02, 0xff, 0x00}, "not valid UTF-8"},
		{"bad list", snap(serializers.KindList, snap(serializers.KindInt64)), []byte{0x05, 0x08}, "list: count 5 does not fit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := oneState(t, c.value, c.bytes)
			_, err := runExport(sp, filepath.Join(t.TempDir(), "out"), export.Options{})
			if !errors.Is(err, serializers.ErrDecode) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want a decode error saying %q", err, c.msg)
			}
			if !strings.Contains(err.Error(), `operator "op" state "s": key group `) || !strings.Contains(err.Error(), "entry 0: value:") {
				t.Errorf("%v does not say where", err)
			}
		})
	}
}

// TestCorruptSegment: a flipped byte in a data block is the reader's
// corruption error, passed on as is.
func TestCorruptSegment(t *testing.T) {
	sp := oneState(t, snap(serializers.KindInt64), i64(1), i64(2))
	path := filepath.Join(sp, "data-000")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-6] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	_, err = runExport(sp, out, export.Options{})
	if !errors.Is(err, savepoint.ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a partial export is at the target: %v", err)
	}
}

// fullDisk is a staging whose files fail with ENOSPC once limit bytes have
// been written to all of them together.
type fullDisk struct {
	storage.Staging
	left int
}

func (s *fullDisk) Create(ctx context.Context, name string) (io.WriteCloser, error) {
	w, err := s.Staging.Create(ctx, name)
	return &fullFile{w, s}, err
}

type fullFile struct {
	io.WriteCloser
	disk *fullDisk
}

func (f *fullFile) Write(p []byte) (int, error) {
	if len(p) > f.disk.left {
		n, _ := f.WriteCloser.Write(p[:f.disk.left])
		f.disk.left = 0
		return n, &os.PathError{Op: "write", Path: "file", Err: syscall.ENOSPC}
	}
	f.disk.left -= len(p)
	return f.WriteCloser.Write(p)
}

// TestFullDisk: an export that runs out of space fails with the system's
// error, and once aborted, as the CLI does, leaves nothing at the target
// and nothing beside it.
func TestFullDisk(t *testing.T) {
	sp := typesSavepoint(t)
	r := openReader(t, sp)
	parent := t.TempDir()
	target := filepath.Join(parent, "out")
	staging, err := storage.Stage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = export.Run(context.Background(), r, &fullDisk{Staging: staging, left: 5000}, export.Options{Workers: 1})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("got %v, want ENOSPC", err)
	}
	if !strings.Contains(err.Error(), ".parquet") {
		t.Errorf("%v does not name the file", err)
	}
	if err := staging.Abort(); err != nil {
		t.Fatal(err)
	}
	if names := fileNames(t, parent); len(names) > 0 {
		t.Errorf("left behind: %v", names)
	}
}

func TestSelectionErrors(t *testing.T) {
	sp := typesSavepoint(t)
	for _, o := range []export.Options{
		{Operator: "nope"},
		{Operator: "types", State: "nope"},
		{Format: "csv"},
		{Compression: "lz4"},
	} {
		if _, err := runExport(sp, filepath.Join(t.TempDir(), "out"), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
