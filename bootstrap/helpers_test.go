package bootstrap_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/bootstrap"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// checkedIn lists the checked-in savepoints.
func checkedIn(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("../testdata/savepoints/v2/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no checked-in savepoints: %v", err)
	}
	return dirs
}

// exportTo exports the savepoint sp into a new directory.
func exportTo(t *testing.T, sp string, o export.Options) string {
	t.Helper()
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "export")
	src := sptest.Open(t, sp)
	st, err := storage.Stage(out, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.Run(ctx, src, st, o); err != nil {
		st.Abort()
		t.Fatal(err)
	}
	if err := st.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	return out
}

// manifestOf is the manifest of the job that wrote a savepoint.
func manifestOf(m *savepoint.Metadata) savepoint.Manifest {
	return savepoint.NewManifest("job", m.Operators)
}

// load bootstraps a savepoint of manifest from the datasets in dir.
func load(t *testing.T, manifest savepoint.Manifest, dir string, o bootstrap.Options) (*bootstrap.Summary, error) {
	t.Helper()
	ctx := context.Background()
	b, err := bootstrap.New(manifest, o)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if err := b.Load(ctx, storage.LocalDir(dir)); err != nil {
		return nil, err
	}
	return b.Commit(ctx)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
