package jobruntest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StopWithSIGTERM runs the test binary again as a child that runs the
// job's command with args (the child's TestMain reads them, one per line,
// from the environment variable env), waits until it says it runs until
// SIGTERM and has completed two checkpoints under checkpoints, so that the
// stop cuts its input past the start whatever the machine's speed, then
// sends SIGTERM. The child must exit 0 after printing "savepoint DIR",
// with DIR under tmp (its TMPDIR, where a savepoint goes without
// -savepoint); StopWithSIGTERM returns DIR.
func StopWithSIGTERM(t testing.TB, env string, args []string, tmp, checkpoints string) string {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), env+"="+strings.Join(args, "\n"), "TMPDIR="+tmp)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := child.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	running := make(chan struct{})
	errDone := make(chan string)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "running until SIGTERM") {
				close(running)
			}
		}
		errDone <- b.String()
	}()
	select {
	case <-running:
	case <-time.After(time.Minute):
		child.Process.Kill()
		t.Fatal("the child did not start running within a minute")
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if ids, _ := filepath.Glob(filepath.Join(checkpoints, "chk-*")); len(ids) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatal("the child completed no checkpoints within two minutes")
		}
	}
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	printed, _ := io.ReadAll(stdout)
	errOut := <-errDone
	if err := child.Wait(); err != nil {
		t.Fatalf("stopped child: %v; stderr:\n%s", err, errOut)
	}
	line := strings.TrimSpace(string(printed))
	sp, ok := strings.CutPrefix(line, "savepoint ")
	if !ok || filepath.Dir(sp) != tmp {
		t.Fatalf("the child printed %q, want the savepoint's directory under %s", line, tmp)
	}
	return sp
}
