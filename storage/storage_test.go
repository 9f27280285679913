package storage

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"_metadata", "data-0001", "shared/abc.sst"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "/etc/passwd", "a/../b", "a//b", `a\b`, "a/"} {
		if err := CheckName(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("CheckName(%q) = %v, want ErrBadName", bad, err)
		}
	}
}

func TestStagePublishAndRead(t *testing.T) {
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "sp")
	s, err := Stage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b", "a", "sub/c"} {
		w, err := s.Create(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, "content of "+name)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("target visible before Publish: %v", err)
	}
	if err := s.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	d := LocalDir(target)
	names, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "a,b,sub/c" {
		t.Fatalf("List = %v", names)
	}
	f, err := d.Open(ctx, "sub/c")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 5)
	if _, err := f.ReadAt(buf, 11); err != nil || string(buf) != "sub/c" || f.Size() != 16 {
		t.Fatalf("ReadAt = %q, %v, size %d", buf, err, f.Size())
	}
	if _, err := d.Open(ctx, "../sp/a"); !errors.Is(err, ErrBadName) {
		t.Fatalf("Open with .. = %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(target))
	if len(entries) != 1 {
		t.Fatalf("staging directory left behind: %v", entries)
	}
}

func TestStageRefusesExistingTargetUnlessForced(t *testing.T) {
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "sp")
	os.Mkdir(target, 0o755)
	os.WriteFile(filepath.Join(target, "old"), []byte("x"), 0o644)
	if _, err := Stage(target, false); !errors.Is(err, ErrExists) {
		t.Fatalf("Stage over existing = %v, want ErrExists", err)
	}
	s, err := Stage(target, true)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := s.Create(ctx, "new")
	w.Close()
	if err := s.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	names, _ := LocalDir(target).List(ctx)
	if strings.Join(names, ",") != "new" {
		t.Fatalf("after forced publish: %v", names)
	}
}

func TestAbortRemovesStaging(t *testing.T) {
	parent := t.TempDir()
	s, err := Stage(filepath.Join(parent, "sp"), false)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := s.Create(context.Background(), "x")
	w.Close()
	if err := s.Abort(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Fatalf("Abort left %v", entries)
	}
}
