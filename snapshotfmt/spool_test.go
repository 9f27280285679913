package snapshotfmt

import (
	"bytes"
	"os"
	"runtime"
	"testing"
)

// A bucket data file's spool lives in the temporary directory without a
// name there: a run killed while it spools leaves nothing behind, and the
// spool still holds what is written to it.
func TestSpoolHasNoName(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("an open file cannot be removed here: abort removes the spool")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s, err := newComposeSink(nil, "op001-00000", ".data")
	if err != nil {
		t.Fatal(err)
	}
	defer s.abort()
	data := bytes.Repeat([]byte("spooled "), 50000)
	if err := s.spoolWrite(data); err != nil {
		t.Fatal(err)
	}
	if err := s.buf.Flush(); err != nil {
		t.Fatal(err)
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Fatalf("the temporary directory holds %v (%v), want nothing", left, err)
	}
	got := make([]byte, len(data))
	if _, err := s.spool.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the spool read back %d bytes (%v), not what was written", len(got), err)
	}
}
