package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// A tiny scale exercises both definitions end to end; the full sizes are
// for benchmark runs, never for tests.
func TestGenerateAtATinyScale(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	if code := run([]string{"-out", dir, "-scale", "0.0002"}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{
		filepath.Join(dir, "sessions-large"), "session-features/category-counts: ",
		filepath.Join(dir, "gateway-large"), "assemble/open: ",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if code := run([]string{"-out", dir, "-scale", "0.0002", "-only", "gateway-large"}, &stderr); code != 1 {
		t.Errorf("writing over an existing savepoint: exit %d, want 1", code)
	}
	if code := run([]string{"-out", dir, "-only", "nope"}, &stderr); code != 2 {
		t.Errorf("-only nope: exit %d, want 2", code)
	}
}
