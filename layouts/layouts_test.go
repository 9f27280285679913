package layouts_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// The opener hands a stateproc savepoint to snapshotfmt.
func TestOpensStateprocSavepoints(t *testing.T) {
	// The frozen savepoints of version 1 as well as the current ones.
	for _, v := range []string{"1", "2"} {
		src, err := layouts.Open(context.Background(), "../testdata/savepoints/v"+v+"/gateway-p2-pebble")
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		if _, ok := src.(*snapshotfmt.Reader); !ok {
			t.Errorf("a stateproc savepoint opened as %T", src)
		}
		if got := src.Layout().String(); got != "stateproc savepoint, format version "+v {
			t.Errorf("layout %q", got)
		}
		if _, ok := src.Metadata().Operator("tenant-cost"); !ok {
			t.Error("the savepoint's operators are not there")
		}
	}
}

// Apache Flink's metadata is recognized by its magic number and read
// through flinkfmt: the state-evolution test's Flink 1.7 savepoint holds
// its three value states, keyed by Integer.
func TestOpensFlinkSavepoints(t *testing.T) {
	dir := filepath.Join("../../shared/flink-savepoints", "flink-end-to-end-tests/flink-state-evolution-test/savepoints/1.7")
	if _, err := os.Stat(filepath.Join(dir, savepoint.MetadataFile)); err != nil {
		t.Skipf("the Flink savepoints are not there (%v)", err)
	}
	src, err := layouts.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if got, want := src.Layout().String(), "Apache Flink savepoint or checkpoint, metadata version 2 (Flink 1.3–1.10), heap"; got != want {
		t.Errorf("layout %q, want %q", got, want)
	}
	m := src.Metadata()
	var states []string
	for _, op := range m.Operators {
		for _, s := range op.States {
			states = append(states, s.Name)
		}
	}
	if strings.Join(states, ",") != "either-state,test-state,tuple-state" {
		t.Errorf("states %v", states)
	}
}

func TestNotASavepoint(t *testing.T) {
	dir := t.TempDir()
	_, err := layouts.Open(context.Background(), dir)
	if !errors.Is(err, savepoint.ErrNotSavepoint) || !strings.Contains(err.Error(), "has no _metadata") {
		t.Errorf("an empty directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, savepoint.MetadataFile), []byte("PK\x03\x04 a zip file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = layouts.Open(context.Background(), dir)
	if !errors.Is(err, savepoint.ErrNotSavepoint) || !strings.Contains(err.Error(), "not a stateproc file") {
		t.Errorf("a foreign _metadata: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, savepoint.MetadataFile), []byte("STP"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err = layouts.Open(context.Background(), dir); !savepoint.BadInput(err) {
		t.Errorf("a _metadata of three bytes: %v", err)
	}
}

// An incremental checkpoint's native databases are read from a local
// directory: OpenDir, for storage elsewhere, refuses one it cannot.
func TestIncrementalCheckpointNeedsALocalDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chk-1")
	if err := os.CopyFS(dir, os.DirFS("../testdata/savepoints/v2/tiny")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_incremental.json"), []byte(`{"version": 1, "databases": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := layouts.OpenDir(context.Background(), elsewhere{storage.LocalDir(dir)})
	if !errors.Is(err, savepoint.ErrUnsupported) || !strings.Contains(err.Error(), "incremental checkpoint") {
		t.Errorf("OpenDir of an incremental checkpoint = %v", err)
	}
	src, err := layouts.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if got := src.Layout().Name; got != "stateproc incremental checkpoint" {
		t.Errorf("opened as %q", got)
	}
}

// elsewhere is a directory that does not say it is local.
type elsewhere struct{ storage.Dir }

func (e elsewhere) Location() string { return "s3://bucket/" + filepath.Base(e.Dir.Location()) }
