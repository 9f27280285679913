//go:build unix

package rewrite_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// TestKilledRewritesLeaveNothingPartial builds the stateproc binary, runs
// every rewrite command into one target and kills it with SIGKILL at
// random points, many times over. After each kill the target must hold
// either nothing or a savepoint that opens and verifies (with --force over
// an old savepoint: the old one or the new one); the next run into the
// target must succeed and remove what the killed ones left; what they left
// is never taken for a savepoint; the input must never change.
func TestKilledRewritesLeaveNothingPartial(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it 50 times")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "stateproc")
	build := exec.Command("go", "build", "-o", bin, "github.com/stateproc/stateproc/cmd/stateproc")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	in := filepath.Join(dir, "in")
	if err := spgen.Write(in, spgen.Config{Seed: 7, Users: 12000, Accounts: 3000, Parallelism: 2, MaxParallelism: 128,
		Now: 1_700_000_000_000, Pad: 100}); err != nil {
		t.Fatal(err)
	}
	before := digest(t, in)
	out := filepath.Join(dir, "out")
	commands := [][]string{
		{"rescale", in, "--max-parallelism", "300", "--parallelism", "3", "--out", out},
		{"prune-ttl", in, "--out", out},
		{"operator", "remove", in, "accounts", "--out", out},
		{"rescale", in, "--max-parallelism", "300", "--out", out, "--force"},
	}
	// How long each command takes when it is not killed: kills are spread
	// over that time, so that they land in every phase.
	full := make([]time.Duration, len(commands))
	for i, c := range commands {
		os.RemoveAll(out)
		start := time.Now()
		if b, err := exec.Command(bin, c...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, b)
		}
		full[i] = time.Since(start)
		mustVerify(t, out)
	}
	t.Logf("uninterrupted runs: rescale %v, prune-ttl %v, operator remove %v, forced rescale %v", full[0], full[1], full[2], full[3])

	rng := rand.New(rand.NewPCG(1, 2))
	const kills = 50
	outcomes := map[string]int{}
	for i := range kills {
		ci := i % len(commands)
		c := commands[ci]
		forced := c[len(c)-1] == "--force"
		var old string
		if forced {
			// The target holds a complete, older savepoint to replace.
			os.RemoveAll(out)
			if b, err := exec.Command(bin, "operator", "rename", in, "accounts", "old-"+fmt.Sprint(i), "--out", out).CombinedOutput(); err != nil {
				t.Fatalf("preparing the old target: %v\n%s", err, b)
			}
			old = "old-" + fmt.Sprint(i)
		} else {
			os.RemoveAll(out)
		}
		cmd := exec.Command(bin, c...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(full[ci]))))
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		killed := err != nil
		if killed {
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("%v failed rather than being killed: %v", c, err)
			}
		}
		outcome := c[0] + ": "
		if forced {
			outcome = "rescale --force over an old savepoint: "
		}
		switch r, err := openVerified(out); {
		case errors.Is(err, fs.ErrNotExist):
			outcome += "nothing at the target"
		case err != nil:
			t.Fatalf("kill %d of %v: the target holds a savepoint that does not verify: %v", i, c, err)
		case forced && hasOperator(r, old):
			outcome += "the old savepoint"
		default:
			outcome += "the new savepoint"
		}
		if !killed {
			outcome += " (finished before the kill)"
		}
		outcomes[outcome]++
		// What the killed run left beside the target is never taken for a
		// savepoint, even a staging directory that holds its metadata.
		for _, name := range temps(t, dir) {
			if st, err := os.Stat(filepath.Join(dir, name)); err != nil || !st.IsDir() {
				continue
			}
			err := exec.Command(bin, "verify", filepath.Join(dir, name)).Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 4 {
				t.Fatalf("kill %d of %v: verify of the leftover %s: %v, want exit 4", i, c, name, err)
			}
			outcomes["leftover temporary directory, refused by verify"]++
			if _, err := openVerified(filepath.Join(dir, name)); err == nil {
				outcomes["leftover temporary directory holding a complete savepoint, refused by its name"]++
			}
		}
		if got := digest(t, in); got != before {
			t.Fatalf("kill %d of %v: the input changed", i, c)
		}
		// Every fifth time, a run to the end must succeed and clean up
		// after all the killed ones.
		if i%5 == 4 {
			os.RemoveAll(out)
			if b, err := exec.Command(bin, commands[1]...).CombinedOutput(); err != nil {
				t.Fatalf("the run after kill %d: %v\n%s", i, err, b)
			}
			mustVerify(t, out)
			if left := temps(t, dir); len(left) > 0 {
				t.Fatalf("after a complete run, temporary files are left: %v", left)
			}
		}
	}
	for o, n := range outcomes {
		t.Logf("%3d × %s", n, o)
	}
}

func openVerified(dir string) (*snapshotfmt.Reader, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(dir))
	if err != nil {
		return nil, err
	}
	if err := sptest.Verify(r); err != nil {
		r.Close()
		return nil, err
	}
	r.Close()
	return r, nil
}

func mustVerify(t *testing.T, dir string) {
	t.Helper()
	if _, err := openVerified(dir); err != nil {
		t.Fatal(err)
	}
}

func hasOperator(r *snapshotfmt.Reader, uid string) bool {
	_, ok := r.Metadata().Operator(uid)
	return ok
}

// temps lists the temporary directories and lock files in dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), storage.TempPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// digest hashes every file's name and bytes under dir.
func digest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
