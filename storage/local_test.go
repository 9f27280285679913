package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// openWithin runs Open with a deadline: the defects these tests pin made
// Open hang on a FIFO.
func openWithin(t *testing.T, d Dir, name string) (File, error) {
	t.Helper()
	type result struct {
		f   File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := d.Open(context.Background(), name)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("Open(%q) still blocked after 5s", name)
		return nil, nil
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesFIFOWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"_metadata", "data-000"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		_, err := openWithin(t, LocalDir(dir), name)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "is a FIFO") {
			t.Errorf("Open of FIFO %s = %v, want ErrNotRegular naming a FIFO", name, err)
		}
	}
}

func TestOpenRefusesSymbolicLinks(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sp")
	writeFile(t, filepath.Join(dir, "data-000"), "inside")
	writeFile(t, filepath.Join(root, "outside"), "secret outside the savepoint")
	writeFile(t, filepath.Join(root, "elsewhere", "data-001"), "outside too")
	links := map[string]string{
		"to-outside": filepath.Join(root, "outside"),
		"relative":   "../outside",
		"to-passwd":  "/etc/passwd",
		"to-inside":  "data-000",
		"dangling":   "nothing-here",
		"linked-dir": filepath.Join(root, "elsewhere"),
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	d := LocalDir(dir)
	for _, name := range []string{"to-outside", "relative", "to-passwd", "to-inside", "dangling", "linked-dir/data-001"} {
		f, err := openWithin(t, d, name)
		if err == nil {
			f.Close()
			t.Errorf("Open(%q) followed a symbolic link", name)
			continue
		}
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("Open(%q) = %v, want ErrNotRegular naming a symbolic link", name, err)
		}
	}
	// The error about a link to /etc/passwd tells nothing about that file.
	if st, err := os.Stat("/etc/passwd"); err == nil {
		_, err := d.Open(context.Background(), "to-passwd")
		if size := strconv.FormatInt(st.Size(), 10); strings.Contains(err.Error(), size) {
			t.Errorf("error %q shows the size %s of the file the link points to", err, size)
		}
	}
	names, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names) != "[data-000]" {
		t.Errorf("List = %v, want only the regular file", names)
	}
	f, err := d.Open(context.Background(), "data-000")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, f.Size())
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "inside" {
		t.Fatalf("ReadAt = %q, %v", buf, err)
	}
}

func TestOpenRefusesDirectoriesAndDevices(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data-000"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero-link")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"data-000": "is a directory", "zero-link": "is a symbolic link"}
	// A device node inside the directory needs the right to make one.
	if err := syscall.Mknod(filepath.Join(dir, "zero-node"), syscall.S_IFCHR|0o644, 1<<8|5); err == nil {
		cases["zero-node"] = "is a character device"
	} else {
		t.Logf("no device node made (%v); the case of a device node inside is not run", err)
	}
	for name, want := range cases {
		_, err := openWithin(t, LocalDir(dir), name)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want ErrNotRegular saying %q", name, err, want)
		}
	}
}

func TestOpenMissingIsNotExist(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"_metadata", "sub/file"} {
		if _, err := LocalDir(dir).Open(context.Background(), name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Open(%q) = %v, want ErrNotExist", name, err)
		}
	}
}

// stageSavepoint stages files named after content and publishes them.
func stageSavepoint(t *testing.T, target, content string, force bool) {
	t.Helper()
	ctx := context.Background()
	s, err := Stage(target, force)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"data-000", MetadataName} {
		w, err := s.Create(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Publish(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestForcedPublishKeepsATargetAtEveryInstant replaces a target over and
// over while another goroutine keeps reading it: the reader must find a
// complete directory every time, never a missing one.
func TestForcedPublishKeepsATargetAtEveryInstant(t *testing.T) {
	parent := t.TempDir()
	target := filepath.Join(parent, "sp")
	stageSavepoint(t, target, "generation 0", false)
	var stop atomic.Bool
	var looks, missing atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			looks.Add(1)
			b, err := os.ReadFile(filepath.Join(target, MetadataName))
			if err != nil || !strings.HasPrefix(string(b), "generation ") {
				missing.Add(1)
			}
		}
	}()
	for i := 1; i <= 100; i++ {
		stageSavepoint(t, target, fmt.Sprintf("generation %d", i), true)
	}
	stop.Store(true)
	<-done
	if n := missing.Load(); n > 0 {
		t.Fatalf("the target was missing or incomplete %d times in %d looks during 100 forced publishes", n, looks.Load())
	}
	if b, _ := os.ReadFile(filepath.Join(target, MetadataName)); string(b) != "generation 100" {
		t.Fatalf("final target holds %q", b)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Fatalf("left beside the target: %v", entries)
	}
	t.Logf("%d looks, none missing", looks.Load())
}

func withoutExchange(t *testing.T) {
	exchangeDirs = func(string, string) error { return errNoExchange }
	t.Cleanup(func() { exchangeDirs = exchange })
}

func TestForcedPublishWithoutExchange(t *testing.T) {
	withoutExchange(t)
	parent := t.TempDir()
	target := filepath.Join(parent, "sp")
	stageSavepoint(t, target, "old", false)
	stageSavepoint(t, target, "new", true)
	if b, _ := os.ReadFile(filepath.Join(target, "data-000")); string(b) != "new" {
		t.Fatalf("target holds %q", b)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Fatalf("left beside the target: %v", entries)
	}
}

// TestStageRestoresTheOldTargetAfterAKilledForcedPublish sets up what a
// forced publish without exchange leaves when it is killed between its two
// renames: no target, the old one aside, the new one staged. The next Stage
// must bring the old one back rather than lose both.
func TestStageRestoresTheOldTargetAfterAKilledForcedPublish(t *testing.T) {
	withoutExchange(t)
	parent := t.TempDir()
	target := filepath.Join(parent, "sp")
	stageSavepoint(t, target, "old", false)
	s, err := Stage(target, true)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := s.Create(context.Background(), MetadataName)
	w.Write([]byte("new"))
	w.Close()
	if err := os.Rename(target, previousPath(target)); err != nil {
		t.Fatal(err)
	}
	// The kill: the second rename never happens.
	if _, err := Stage(target, false); !errors.Is(err, ErrExists) {
		t.Fatalf("Stage after the kill = %v, want ErrExists for the restored old target", err)
	}
	if b, err := os.ReadFile(filepath.Join(target, "data-000")); err != nil || string(b) != "old" {
		t.Fatalf("target after recovery holds %q, %v; want the old savepoint", b, err)
	}
	if _, err := os.Lstat(previousPath(target)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the moved-aside copy is still there: %v", err)
	}
	// A kill after the second rename leaves the old copy aside with the new
	// target in place: the next Stage removes the old copy.
	if err := os.Mkdir(previousPath(target), 0o755); err != nil {
		t.Fatal(err)
	}
	s2, err := Stage(target, true)
	if err != nil {
		t.Fatal(err)
	}
	s2.Abort()
	if _, err := os.Lstat(previousPath(target)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the completed publish's old copy was kept: %v", err)
	}
}

func TestPublishRefusesATargetThatAppeared(t *testing.T) {
	target := filepath.Join(t.TempDir(), "sp")
	s, err := Stage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(context.Background()); !errors.Is(err, ErrExists) {
		t.Fatalf("Publish over a directory made meanwhile = %v, want ErrExists", err)
	}
}
