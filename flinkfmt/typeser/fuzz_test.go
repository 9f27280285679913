package typeser_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/storage"
)

// seedSnapshots adds, from the fixtures' inline keyed streams, the bytes
// from the key serializer's versioned snapshot on: a snapshot followed by
// more snapshots and values.
func seedSnapshots(f *testing.F) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "flink-savepoints")
	inv, err := os.ReadFile(filepath.Join(root, "inventory.tsv"))
	if err != nil {
		f.Add([]byte("\x00\x4aorg.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x2a"))
		return
	}
	for i, line := range strings.Split(strings.TrimSpace(string(inv)), "\n") {
		if i == 0 {
			continue
		}
		dir := strings.TrimSuffix(strings.SplitN(line, "\t", 2)[0], "/_metadata")
		r, err := flinkfmt.Open(context.Background(), storage.LocalDir(filepath.Join(root, dir)), flinkfmt.Options{})
		if err != nil {
			continue
		}
		for _, op := range r.Metadata().Operators {
			for _, st := range op.Subtasks {
				if h := st.ManagedKeyed; h != nil && h.Stream != nil && h.Stream.Kind == flinkfmt.StreamInline && len(h.Stream.Data) > 9 && len(h.Stream.Data) < 8<<10 {
					f.Add(h.Stream.Data[9:])
				}
			}
		}
	}
}

// FuzzSnapshot restores a serializer from arbitrary bytes and decodes the
// bytes after its snapshot as a value, framed and unframed; skipping the
// value must stop where reading it does and fail where it fails.
func FuzzSnapshot(f *testing.F) {
	seedSnapshots(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r := wire.New(b, 0)
		s, err := typeser.ReadVersioned(r)
		if err != nil {
			return
		}
		rest := r.Rest()
		_, _ = s.Decode(rest)
		read, skip := wire.New(rest, 0), wire.New(rest, 0)
		_, rerr := s.Read(read)
		serr := s.Skip(skip)
		if (rerr == nil) != (serr == nil) || rerr == nil && read.Pos() != skip.Pos() {
			t.Fatalf("Read stops at %d (%v), Skip at %d (%v)", read.Pos(), rerr, skip.Pos(), serr)
		}
		if n, ok := s.QuickSkip(rest); ok && (serr != nil || n != skip.Pos()) {
			t.Fatalf("QuickSkip steps over %d bytes, Skip stops at %d (%v)", n, skip.Pos(), serr)
		}
		_ = s.Type.String()
	})
}
