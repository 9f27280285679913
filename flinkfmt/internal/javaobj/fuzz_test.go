package javaobj

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// seedStreams adds the Java-serialized checkpoint properties that end the
// fixtures' _metadata files of version 4 and later.
func seedStreams(f *testing.F) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "flink-savepoints")
	n := 0
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "_metadata" || n >= 64 {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if i := bytes.LastIndex(b, []byte{0xAC, 0xED, 0x00, 0x05}); i >= 0 {
			f.Add(b[i:])
			n++
		}
		return nil
	})
	f.Add([]byte{0xAC, 0xED, 0x00, 0x05, 0x74, 0x00, 0x01, 'x'})
}

// FuzzParse parses arbitrary object streams within small limits.
func FuzzParse(f *testing.F) {
	seedStreams(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, n, err := Parse(b, Limits{MaxDepth: 32, MaxHandles: 1024, MaxValues: 1 << 14})
		if err == nil && (n < 4 || n > len(b)) {
			t.Fatalf("parsed %d of %d bytes", n, len(b))
		}
	})
}
