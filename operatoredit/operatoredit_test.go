package operatoredit_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/operatoredit"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/snapshotfmt"
)

func setup(t *testing.T) (string, *snapshotfmt.Reader) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(in, spgen.Config{Seed: 1, Users: 500, Accounts: 50, Parallelism: 2, MaxParallelism: 128, Now: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	return in, sptest.Open(t, in)
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Removing an operator drops its data files and segments; every other data
// file is the input's, byte for byte, though the operators after it move up
// one place in the metadata.
func TestRemove(t *testing.T) {
	in, r := setup(t)
	out := filepath.Join(t.TempDir(), "out")
	rep, err := operatoredit.Remove(context.Background(), r, in, "features", rewrite.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if rep.KeyedStates != 4 || rep.TimerServices != 1 || rep.Entries == 0 {
		t.Fatalf("report %+v", rep)
	}
	o := sptest.Open(t, out)
	m := o.Metadata()
	if len(m.Operators) != 2 || m.Operators[0].UID != "source" || m.Operators[1].UID != "accounts" {
		t.Fatalf("operators %+v", m.Operators)
	}
	if got, want := o.DataFiles(), []string{"op002-00000.data", "op002-00001.data"}; !slices.Equal(got, want) {
		t.Fatalf("data files %v, want %v", got, want)
	}
	for _, name := range o.DataFiles() {
		if !bytes.Equal(read(t, filepath.Join(in, name)), read(t, filepath.Join(out, name))) {
			t.Fatalf("%s changed", name)
		}
	}
	if got, want := sptest.OperatorSegments(t, o, 1), sptest.OperatorSegments(t, r, 2); len(got) != len(want) {
		t.Fatalf("%d segments of accounts, want %d", len(got), len(want))
	}
}

// Renaming changes the uid in the metadata and nothing else.
func TestRename(t *testing.T) {
	in, r := setup(t)
	out := filepath.Join(t.TempDir(), "out")
	if _, err := operatoredit.Rename(context.Background(), r, in, "accounts", "billing", rewrite.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	o := sptest.Open(t, out)
	if _, ok := o.Metadata().Operator("billing"); !ok {
		t.Fatal("no operator billing")
	}
	if _, ok := o.Metadata().Operator("accounts"); ok {
		t.Fatal("accounts is still there")
	}
	for _, name := range r.DataFiles() {
		if !bytes.Equal(read(t, filepath.Join(in, name)), read(t, filepath.Join(out, name))) {
			t.Fatalf("%s changed", name)
		}
	}
	for _, uid := range []string{"", "accounts", "features"} {
		_, err := operatoredit.Rename(context.Background(), r, in, "accounts", uid, rewrite.Options{Out: filepath.Join(t.TempDir(), "x")})
		if !errors.Is(err, rewrite.ErrRefused) {
			t.Errorf("rename to %q: %v", uid, err)
		}
	}
	if _, err := operatoredit.Remove(context.Background(), r, in, "nope", rewrite.Options{Out: filepath.Join(t.TempDir(), "x")}); !errors.Is(err, rewrite.ErrRefused) {
		t.Errorf("remove nope: %v", err)
	}
}
