//go:build unix && !solaris && !aix

package workdir

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateproc/stateproc/storage"
)

const prefix = "stateproc-test-"

// A test binary started with holdEnv set to a parent directory creates a
// work directory there, prints its path and waits until its stdin closes
// or it is killed.
const holdEnv = "WORKDIR_TEST_HOLD"

func TestMain(m *testing.M) {
	if parent := os.Getenv(holdEnv); parent != "" {
		d, err := Create(parent, prefix)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(d.Path, "spill"), make([]byte, 1<<16), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(d.Path)
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hold starts a process that holds a work directory in parent, and returns
// it and the directory once the directory exists.
func hold(t *testing.T, parent string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+parent)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the holder printed no directory: %v", err)
	}
	return cmd, strings.TrimSpace(line)
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// The directory of a run killed with SIGKILL is removed by the next
// process that creates one in the same parent; that of a live run is not.
func TestKilledRunsDirectoryIsRemoved(t *testing.T) {
	parent := t.TempDir()
	dead, deadDir := hold(t, parent)
	_, liveDir := hold(t, parent)
	kill(t, dead)
	if !exists(filepath.Join(deadDir, LockName)) {
		t.Fatalf("the killed run left no lock file in %s", deadDir)
	}
	d, err := Create(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if exists(deadDir) {
		t.Errorf("the killed run's %s is still there", deadDir)
	}
	if !exists(filepath.Join(liveDir, "spill")) {
		t.Errorf("the live run's %s was removed", liveDir)
	}
	if !slices.Equal(d.Removed, []string{deadDir}) {
		t.Errorf("Removed = %v, want [%s]", d.Removed, deadDir)
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if exists(d.Path) || exists(gonePath(d.Path)) {
		t.Errorf("Remove left %s", d.Path)
	}
}

// A process sweeps a parent once, at its first directory there: the second
// directory does not read the parent again.
func TestSweepsOncePerParent(t *testing.T) {
	parent := t.TempDir()
	first, err := Create(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Remove()
	dead := deadDir(t, parent, prefix+"7"+liveSuffix)
	second, err := Create(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Remove()
	if !exists(dead) || len(second.Removed) != 0 {
		t.Errorf("the second directory swept again: removed %v", second.Removed)
	}
}

// deadDir makes a work directory named name in parent as a killed run
// leaves it: a lock file that nobody holds, and a spill file.
func deadDir(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{LockName, "spill"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A sweep removes only the directories of its own prefix whose owner is
// dead, and leaves everything else as it is.
func TestSweepRemovesOnlyDeadRunsDirectories(t *testing.T) {
	parent, elsewhere := t.TempDir(), t.TempDir()
	now := time.Now()
	old := now.Add(-2 * locklessAge)
	removed := []string{
		deadDir(t, parent, prefix+"1"+liveSuffix),
		deadDir(t, parent, prefix+"2"+goneSuffix),
		// Without its lock file, empty, old: killed before it locked it.
		filepath.Join(parent, prefix+"3"+liveSuffix),
		// What a removal cut short left: no lock file any more.
		filepath.Join(parent, prefix+"4"+goneSuffix),
		// An old, empty lock file: killed before it locked the file.
		deadDir(t, parent, prefix+"5"+liveSuffix),
	}
	for _, d := range removed[2:4] {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	emptyLock := func(dir string, at time.Time) {
		lock := filepath.Join(dir, LockName)
		if err := os.WriteFile(lock, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(lock, at, at); err != nil {
			t.Fatal(err)
		}
	}
	emptyLock(removed[4], old)
	if err := os.WriteFile(filepath.Join(removed[3], "spill"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(removed[2], old, old); err != nil {
		t.Fatal(err)
	}

	live := deadDir(t, parent, prefix+"10"+liveSuffix)
	lock, err := storage.LockFile(filepath.Join(live, LockName))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	kept := []string{
		live,
		// Names that are not of the prefix's work directories.
		deadDir(t, parent, prefix+"11"),
		deadDir(t, parent, prefix+"12a"+liveSuffix),
		deadDir(t, parent, prefix+liveSuffix),
		deadDir(t, parent, prefix+"x-13"+liveSuffix),
		deadDir(t, parent, "stateproc-other-14"+liveSuffix),
		deadDir(t, parent, prefix+"15"+liveSuffix+".old"),
		// Without a lock file and young: between its creation and its lock.
		filepath.Join(parent, prefix+"16"+liveSuffix),
		// Without a lock file but not empty: not what a killed run leaves.
		deadDir(t, parent, prefix+"17"+liveSuffix),
		// A file, a link to a dead directory, a link as the lock file, a
		// FIFO as the lock file.
		filepath.Join(parent, prefix+"18"+liveSuffix),
		filepath.Join(parent, prefix+"19"+liveSuffix),
		deadDir(t, parent, prefix+"20"+liveSuffix),
		deadDir(t, parent, prefix+"21"+liveSuffix),
		// A young, empty lock file: its creator may be about to lock it.
		deadDir(t, parent, prefix+"22"+liveSuffix),
	}
	emptyLock(kept[13], now)
	if err := os.Mkdir(kept[7], 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(kept[8], LockName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(kept[8], old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kept[9], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	target := deadDir(t, elsewhere, prefix+"30"+liveSuffix)
	if err := os.Symlink(target, kept[10]); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(kept[11], LockName)
	if err := os.Remove(linked); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(target, LockName), linked); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(kept[12], LockName)
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}

	got := sweep(parent, prefix, now)
	slices.Sort(got)
	if !slices.Equal(got, removed) {
		t.Errorf("sweep removed %v, want %v", got, removed)
	}
	for _, d := range removed {
		if exists(d) || exists(gonePath(d)) {
			t.Errorf("%s is still there", d)
		}
	}
	for _, d := range append(kept, target) {
		if !exists(d) {
			t.Errorf("%s was removed", d)
		}
	}
	if !exists(filepath.Join(target, "spill")) {
		t.Errorf("the sweep removed files through a link")
	}
}

// Remove of a directory that its user removed already releases the lock
// and is no error; a second Remove is none either.
func TestRemoveOfRemovedDirectory(t *testing.T) {
	d, err := Create(t.TempDir(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(d.Path); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := d.Remove(); err != nil {
		t.Fatalf("Remove again: %v", err)
	}
}

// The lock file names its holder, for whoever looks.
func TestLockFileNamesItsHolder(t *testing.T) {
	d, err := Create(t.TempDir(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Remove()
	_, err = storage.LockFile(filepath.Join(d.Path, LockName))
	if !errors.Is(err, storage.ErrHeld) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Errorf("taking a live directory's lock: %v, want ErrHeld naming process %d", err, os.Getpid())
	}
	if _, err := os.Stat(d.Path); errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the directory is gone")
	}
}
