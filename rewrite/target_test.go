package rewrite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/storage"
)

func TestCheckTarget(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "sp")
	if err := os.MkdirAll(filepath.Join(in, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(in, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target string
		force  bool
		want   error
	}{
		{filepath.Join(dir, "out"), false, nil},
		{in, true, ErrRefused},
		{filepath.Join(dir, "link"), true, ErrRefused},
		{filepath.Join(dir, "sp", ".", ""), true, ErrRefused},
		{filepath.Join(in, "sub"), true, ErrRefused},
		{filepath.Join(in, "new"), false, ErrRefused},
		{dir, true, ErrRefused},
		{filepath.Join(dir, storage.TempPrefix+"x"), false, ErrRefused},
		{filepath.Join(dir, "missing", "out"), false, ErrRefused},
		{"", false, ErrRefused},
	} {
		if err := CheckTarget(in, tc.target, tc.force); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("CheckTarget(%q, force %t) = %v, want %v", tc.target, tc.force, err, tc.want)
		}
	}
	// The input named by its _metadata, as the readers take it, is its
	// directory.
	if err := os.WriteFile(filepath.Join(in, "_metadata"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{in, filepath.Join(in, "sub"), filepath.Join(in, "new"), dir} {
		if err := CheckTarget(filepath.Join(in, "_metadata"), target, true); !errors.Is(err, ErrRefused) {
			t.Errorf("CheckTarget(%q) of the input named by its _metadata = %v, want a refusal", target, err)
		}
	}
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o755)
	if err := CheckTarget(in, other, false); !errors.Is(err, storage.ErrExists) {
		t.Errorf("an existing target without force: %v", err)
	}
	if err := CheckTarget(in, other, true); err != nil {
		t.Errorf("an existing target with force: %v", err)
	}
}

// A temporary directory of a target is recognized by its name alone,
// without mistaking another target's for it.
func TestStaleFor(t *testing.T) {
	for name, want := range map[string]bool{
		".stateproc-tmp-sp-123":       true,
		".stateproc-tmp-sp-123.old":   true,
		".stateproc-tmp-sp-":          false,
		".stateproc-tmp-sp-2-123":     false, // target "sp-2"
		".stateproc-tmp-sp.lock":      false,
		".stateproc-tmp-spx-123":      false,
		"sp-123":                      false,
		".stateproc-tmp-sp-12a":       false,
		".stateproc-tmp-sp-123.older": false,
	} {
		if got := staleFor(name, "sp"); got != want {
			t.Errorf("staleFor(%q, sp) = %t", name, got)
		}
	}
}
