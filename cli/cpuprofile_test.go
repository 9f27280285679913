package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCPUProfileFlag(t *testing.T) {
	sp := filepath.Join("..", "testdata", "savepoints", "v2", "tiny")
	var plain bytes.Buffer
	if code := Main(context.Background(), []string{"inspect", sp}, &plain, io.Discard); code != ExitOK {
		t.Fatalf("inspect exited %d", code)
	}
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"inspect", "--cpuprofile", prof, sp}, &out, &errOut); code != ExitOK {
		t.Fatalf("inspect --cpuprofile exited %d: %s", code, errOut.String())
	}
	if out.String() != plain.String() {
		t.Errorf("--cpuprofile changed the command's output")
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A profile is a gzipped protocol buffer.
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the profile is not gzip: %v", err)
	}
	if body, err := io.ReadAll(zr); err != nil || len(body) == 0 {
		t.Fatalf("profile body: %d bytes, %v", len(body), err)
	}

	errOut.Reset()
	bad := filepath.Join(t.TempDir(), "missing-dir", "cpu.prof")
	if code := Main(context.Background(), []string{"inspect", "--cpuprofile", bad, sp}, io.Discard, &errOut); code != ExitFailure {
		t.Errorf("unwritable --cpuprofile exited %d, want %d", code, ExitFailure)
	}
	if !strings.Contains(errOut.String(), "--cpuprofile") {
		t.Errorf("the error does not name the flag: %q", errOut.String())
	}
}
