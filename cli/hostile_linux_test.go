package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/hostile"
)

// corpusCommand is one command run over every savepoint of the corpus.
type corpusCommand struct {
	name string
	// reads says how far the command reads: "index" (metadata and index),
	// "data" (every record) or "decode" (every value).
	reads string
	// decodes names the one state whose values the command decodes, where
	// it reads no further than "data" for the others.
	decodes string
	// out says the command writes a savepoint (or an export) to its --out.
	out  bool
	args func(sp, state, out, job string) []string
}

var corpusCommands = []corpusCommand{
	{"inspect", "index", "", false, func(sp, _, _, _ string) []string { return []string{"inspect", sp} }},
	{"inspect --scan", "data", "", false, func(sp, _, _, _ string) []string { return []string{"inspect", "--scan", "--top", "3", sp} }},
	{"dump", "decode", "", false, func(sp, st, _, _ string) []string {
		return []string{"dump", sp, "--operator", hostile.Operator, "--state", st, "--limit", "1000"}
	}},
	{"verify", "data", "", false, func(sp, _, _, _ string) []string { return []string{"verify", sp} }},
	{"verify --deep", "decode", "", false, func(sp, _, _, _ string) []string { return []string{"verify", "--deep", sp} }},
	{"size", "data", "", false, func(sp, _, _, _ string) []string { return []string{"size", sp} }},
	{"check", "index", "", false, func(sp, _, _, job string) []string { return []string{"check", sp, "--job", job} }},
	{"export", "decode", "", true, func(sp, _, out, _ string) []string { return []string{"export", sp, "--out", out} }},
	{"rescale", "data", "", true, func(sp, _, out, _ string) []string {
		return []string{"rescale", sp, "--max-parallelism", "256", "--out", out}
	}},
	{"prune-ttl", "data", "", true, func(sp, _, out, _ string) []string {
		return []string{"prune-ttl", sp, "--now", "2026-01-01T00:00:00Z", "--out", out}
	}},
	{"operator rename", "data", "", true, func(sp, _, out, _ string) []string {
		return []string{"operator", "rename", sp, hostile.Operator, "renamed", "--out", out}
	}},
	{"operator remove", "data", "", true, func(sp, _, out, _ string) []string {
		return []string{"operator", "remove", sp, hostile.Other, "--out", out}
	}},
	{"migrate", "data", "", true, func(sp, _, out, job string) []string { return []string{"migrate", sp, "--job", job, "--out", out} }},
	{"migrate records", "data", "records", true, func(sp, _, out, job string) []string {
		return []string{"migrate", sp, "--job", filepath.Join(filepath.Dir(job), hostile.JobV2File), "--out", out}
	}},
}

// wantExit is the exit code of a command that reads as far as reads over
// a savepoint damaged at level.
func wantExit(level hostile.Level, reads string) int {
	switch {
	case level == hostile.LevelMetadata,
		level == hostile.LevelFraming && reads != "index",
		level == hostile.LevelValues && reads == "decode":
		return 4
	}
	return 0
}

// maxRSS is the most a command may take over any savepoint of the corpus,
// at GOMAXPROCS=16, whatever the machine's cores.
const maxRSS = 256 << 20

// TestHostileCorpus runs every command that reads a savepoint, and every
// rewrite, over every savepoint of testdata/hostile (and over FIFOs and a
// directory in place of its files, which git cannot hold), as its own
// process at GOMAXPROCS=16: each exits as the damage's level says (4 where
// it reads as far as the damage), never panics, stays under 256 MiB, opens
// nothing outside the savepoint (watched with inotify), and leaves its
// input as it was; what a rewrite publishes passes verify.
func TestHostileCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every command over every hostile savepoint")
	}
	bin, err := exec.LookPath("stateproc")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "hostile")
	copyTree(t, "../testdata/hostile", root)
	entries := readManifest(t, filepath.Join(root, hostile.ManifestFile))
	entries = append(entries, specialEntries(t, root)...)
	job := filepath.Join(root, hostile.JobFile)
	before := treeHash(t, root)
	watch := newWatch(t, filepath.Join(root, hostile.Outside))
	outs := t.TempDir()
	for _, e := range entries {
		for _, c := range corpusCommands {
			sp := filepath.Join(root, e.name)
			out := filepath.Join(outs, strings.ReplaceAll(e.name+"-"+c.name, " ", "-"))
			reads := c.reads
			if c.decodes == e.state {
				reads = "decode"
			}
			want := wantExit(e.level, reads)
			code, rss, stderr := runCorpus(t, bin, c.args(sp, e.state, out, job)...)
			what := e.name + ": " + c.name
			switch {
			case code != want:
				t.Errorf("%s exited %d, want %d: %s", what, code, want, stderr)
			case strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine "):
				t.Errorf("%s panicked: %s", what, stderr)
			case rss >= maxRSS:
				t.Errorf("%s peaked at %d MiB", what, rss>>20)
			}
			if opened := watch.events(); opened != "" {
				t.Errorf("%s opened %s, outside the savepoint", what, opened)
			}
			if !c.out {
				continue
			}
			if want != 0 {
				if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s failed and left %s", what, out)
				}
				continue
			}
			if c.name == "export" {
				continue
			}
			if code, _, stderr := runCorpus(t, bin, "verify", out); code != 0 {
				t.Errorf("%s published a savepoint that verify refuses: %s", what, stderr)
			}
		}
	}
	if after := treeHash(t, root); after != before {
		t.Error("the commands changed the corpus they read")
	}
}

type corpusEntry struct {
	name, state string
	level       hostile.Level
}

func readManifest(t *testing.T, path string) []corpusEntry {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusEntry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			t.Fatalf("%s: line %q", path, line)
		}
		out = append(out, corpusEntry{name: f[0], level: hostile.Level(f[1]), state: f[2]})
	}
	if len(out) < 20 {
		t.Fatalf("%s lists %d savepoints", path, len(out))
	}
	return out
}

// specialEntries makes the savepoints whose files git cannot hold: FIFOs
// as the metadata and as a data file, and a directory as a data file.
func specialEntries(t *testing.T, root string) []corpusEntry {
	base := filepath.Join(root, "index-more-entries")
	var out []corpusEntry
	for _, s := range []struct{ name, file, kind string }{
		{"fifo-metadata", hostile.MetadataName, "fifo"},
		{"fifo-data", "data-000", "fifo"},
		{"dir-data", "data-000", "dir"},
	} {
		dir := filepath.Join(root, s.name)
		copyTree(t, base, dir)
		p := filepath.Join(dir, s.file)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		var err error
		if s.kind == "fifo" {
			err = syscall.Mkfifo(p, 0o644)
		} else {
			err = os.Mkdir(p, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, corpusEntry{name: s.name, state: "values", level: hostile.LevelMetadata})
	}
	return out
}

// runCorpus runs the command at GOMAXPROCS=16 and returns its exit code,
// its peak RSS and its stderr. A command that blocks fails the test.
func runCorpus(t *testing.T, bin string, args ...string) (int, int64, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=16")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("stateproc %s did not finish: %v", strings.Join(args, " "), ctx.Err())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	return cmd.ProcessState.ExitCode(), rss, stderr.String()
}

// watch reports the files opened or read under a directory.
type watch struct {
	t  *testing.T
	fd int
}

func newWatch(t *testing.T, dir string) *watch {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN|syscall.IN_ACCESS); err != nil {
		t.Fatal(err)
	}
	w := &watch{t: t, fd: fd}
	// Reading the directory to copy it must not count.
	w.events()
	if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if w.events() == "" {
		t.Fatal("the inotify watch sees nothing")
	}
	os.Remove(filepath.Join(dir, "probe"))
	w.events()
	return w
}

// events drains the events so far and names the files they are about.
func (w *watch) events() string {
	var names []string
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(w.fd, buf)
		if n <= 0 || err != nil {
			break
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			// struct inotify_event: wd, mask, cookie, len, then the name.
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+size]), "\x00")
			if name == "" {
				name = "the directory"
			}
			names = append(names, name)
			off += syscall.SizeofInotifyEvent + size
		}
	}
	return strings.Join(names, ", ")
}

// copyTree copies files, directories and symbolic links (as links).
func copyTree(t *testing.T, src, dst string) {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, to)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeHash hashes the names, links and regular files under root.
func treeHash(t *testing.T, root string) string {
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		h.Write([]byte(p))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			h.Write([]byte(link))
			return err
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			h.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(h.Sum(nil))
}
