//go:build linux

package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// The commands below make work directories of their own, in the system's
// temporary directory or one a flag names. Each test runs its command as
// a child process with TMPDIR at a directory of the test: one run is
// killed with SIGKILL while its work directory exists, another is stopped
// there (alive, holding its directory), and one more runs to its end. The
// last run must have removed the killed run's directory and kept the
// stopped run's.

func TestSizeRemovesKilledRunsDatabases(t *testing.T) {
	sp, err := filepath.Abs(filepath.Join("..", "testdata", "savepoints", "v2", "sessions-p2-heap"))
	if err != nil {
		t.Fatal(err)
	}
	checkKilledRunsSwept(t, t.TempDir(), "stateproc-size-", "size", sp)
}

func TestDiffRemovesKilledRunsRebucketedOperators(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "sp")
	if err := sptest.Write(sp, demoMeta(), demoEntries(), snapshotfmt.Options{}); err != nil {
		t.Fatal(err)
	}
	sp720 := filepath.Join(dir, "sp720")
	if _, stderr, code := runCLI(t, "rescale", sp, "--max-parallelism", "720", "--out", sp720); code != cli.ExitOK {
		t.Fatalf("rescale: exit %d: %s", code, stderr)
	}
	checkKilledRunsSwept(t, t.TempDir(), "stateproc-diff-", "diff", sp, sp720)
}

func TestCheckpointReadRemovesKilledRunsFetchedDatabases(t *testing.T) {
	dir := t.TempDir()
	last, err := makeCheckpoint(filepath.Join(dir, "root"), filepath.Join(dir, "work"))
	if err != nil {
		t.Fatal(err)
	}
	checkKilledRunsSwept(t, t.TempDir(), "stateproc-checkpoint-", "inspect", "--scan", last)
}

// checkKilledRunsSwept runs stateproc with args three times, with TMPDIR
// at tmp, where its work directories are named kind and more: the first
// run is killed while its directory exists, the second is stopped there,
// the third runs to its end.
func checkKilledRunsSwept(t *testing.T, tmp, kind string, args ...string) {
	t.Helper()
	dead := startWithWorkDir(t, tmp, kind, args)
	dead.kill(t)
	if _, err := os.Lstat(dead.dir); err != nil {
		t.Fatalf("the killed run left no directory: %v", err)
	}
	live := startWithWorkDir(t, tmp, kind, args)
	last := exec.Command("stateproc", args...)
	last.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := last.CombinedOutput(); err != nil {
		t.Fatalf("the run after the killed one: %v\n%s", err, out)
	}
	if _, err := os.Lstat(dead.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed run's %s is still there (%v)", dead.dir, err)
	}
	if st, err := os.Lstat(live.dir); err != nil || !st.IsDir() {
		t.Errorf("the live run's %s was removed (%v)", live.dir, err)
	}
}

// workRun is a run of stateproc stopped while its work directory exists;
// done is closed once it has ended.
type workRun struct {
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

func (r *workRun) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-r.done
}

// startWithWorkDir starts stateproc with args and TMPDIR at tmp, watches
// tmp for a new directory whose name starts with kind, that is not being
// removed (.gone) and that holds something besides its lock file (so that
// its creator has locked it), and stops the run (SIGSTOP) once one is
// there; a directory that is no longer so once every thread of the run has
// stopped is given up and the run continued. A run that ends before one is
// seen is started again.
func startWithWorkDir(t *testing.T, tmp, kind string, args []string) *workRun {
	t.Helper()
	before := map[string]bool{}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		before[e.Name()] = true
	}
	for range 20 {
		r := &workRun{cmd: exec.Command("stateproc", args...), done: make(chan struct{})}
		r.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			r.cmd.Wait()
			close(r.done)
		}()
		if r.watch(t, tmp, kind, before) {
			t.Cleanup(func() {
				r.cmd.Process.Signal(syscall.SIGKILL)
				<-r.done
			})
			return r
		}
	}
	t.Fatalf("stateproc %v made no directory %s* in %s that could be caught", args, kind, tmp)
	return nil
}

// watch reports whether r was stopped with a new directory of kind in
// parent, or false once it ended.
func (r *workRun) watch(t *testing.T, parent, kind string, before map[string]bool) bool {
	t.Helper()
	for {
		select {
		case <-r.done:
			return false
		default:
		}
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			dir := filepath.Join(parent, e.Name())
			if before[e.Name()] || !e.IsDir() || !strings.HasPrefix(e.Name(), kind) || strings.HasSuffix(e.Name(), ".gone") || !busy(dir) {
				continue
			}
			if r.cmd.Process.Signal(syscall.SIGSTOP) != nil || !stopped(r.cmd.Process.Pid) {
				// It ended in the meantime.
				continue
			}
			if busy(dir) {
				r.dir = dir
				return true
			}
			r.cmd.Process.Signal(syscall.SIGCONT)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// busy reports whether dir holds anything besides a work directory's lock
// file.
func busy(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name() != ".stateproc-work.lock" {
			return true
		}
	}
	return false
}

// stopped waits until every thread of process pid is stopped, and reports
// false if it ends first. A signal is delivered to each thread when it
// next runs, after kill returns.
func stopped(pid int) bool {
	for {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return false
		}
		stopped, running := 0, 0
		for _, task := range tasks {
			// A thread that has exited has no state to read, or Z or X.
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			i := bytes.LastIndexByte(b, ')')
			if i < 0 || i+2 >= len(b) {
				continue
			}
			switch b[i+2] {
			case 'T', 't':
				stopped++
			case 'Z', 'X':
			default:
				running++
			}
		}
		switch {
		case running == 0 && stopped > 0:
			return true
		case running == 0:
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
}
