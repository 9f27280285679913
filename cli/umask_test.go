//go:build unix

package cli_test

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stateproc/stateproc/cli"
)

// What the commands write is readable as the umask says, as what cp or
// the job itself writes is: no file of a savepoint or a report comes out
// private because it was staged under a temporary name.
func TestWrittenFilesFollowTheUmask(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	in, _ := filepath.Abs("../testdata/savepoints/v2/sessions-p2-heap")
	tmp := t.TempDir()
	for _, args := range [][]string{
		{"prune-ttl", in, "--out", filepath.Join(tmp, "pruned")},
		{"rescale", in, "--max-parallelism", "256", "--out", filepath.Join(tmp, "rescaled")},
		{"export", in, "--out", filepath.Join(tmp, "parquet")},
		{"report", in, "--out", filepath.Join(tmp, "report.html")},
	} {
		if code, _, stderr := inProcess(args...); code != cli.ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	files := 0
	err := filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == tmp {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o644)
		if d.IsDir() {
			want = 0o755
		} else {
			files++
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v under umask 022", p[len(tmp)+1:], fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 {
		t.Errorf("found %d files written, want the savepoints', the export's and the report", files)
	}
}
