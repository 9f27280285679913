package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSizeExitCodes checks the documented exit codes of size: 2 for bad
// flags and malformed plans, 4 for input that is not a savepoint.
func TestSizeExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("operators:\n  - uid: op\n    parallelism: 0\n    states: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notSavepoint := filepath.Join(dir, "empty")
	if err := os.Mkdir(notSavepoint, 0o755); err != nil {
		t.Fatal(err)
	}
	const seed = "../sizing/testdata/sessionfeatures.yaml"
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"size", "--plan", seed}, ExitOK},
		{[]string{"size", "--plan", seed, "-o", "json"}, ExitOK},
		{[]string{"size", "--plan", bad}, ExitUsage},
		{[]string{"size", "--plan", filepath.Join(dir, "missing.yaml")}, ExitUsage},
		{[]string{"size", "--plan", seed, "--parallelism", "1000"}, ExitUsage},
		{[]string{"size", "--plan", seed, "--sample", "x"}, ExitUsage},
		{[]string{"size", "--plan", seed, "--memory-per-slot", "8 bananas"}, ExitUsage},
		{[]string{"size", "--plan", seed, "--change-rate", "0"}, ExitUsage},
		{[]string{"size", "--bogus"}, ExitUsage},
		{[]string{"size"}, ExitUsage},
		{[]string{"size", "--now", "yesterday", filepath.Join(dir, "missing")}, ExitUsage},
		{[]string{"size", filepath.Join(dir, "missing")}, ExitBadInput},
		{[]string{"size", notSavepoint}, ExitBadInput},
		{[]string{"size", bad}, ExitBadInput},
	} {
		var out, errs bytes.Buffer
		if code := Main(context.Background(), c.args, &out, &errs); code != c.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.args, code, c.code, errs.String())
		}
	}
}
