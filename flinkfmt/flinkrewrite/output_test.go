package flinkrewrite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/storage"
)

// The files of absolute file handles (Flink before 1.11 recorded absolute
// paths) are copied into the output and referred to by relative handles;
// two that share a base name get names of their own.
func TestAbsoluteHandlesBecomeRelative(t *testing.T) {
	dir, _ := sessions(t, 2000, false)
	before := readBack(t, dir)
	r := open(t, dir)
	m := r.Metadata()
	op := m.Operators[0]
	for i, sub := range []string{"a", "b"} {
		s := op.Subtasks[i].ManagedKeyed.Stream
		if s.Kind != flinkfmt.StreamRelativeFile {
			t.Fatalf("subtask %d: a %s stream", i, s.Kind)
		}
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, s.Name), filepath.Join(dir, sub, "data")); err != nil {
			t.Fatal(err)
		}
		*s = flinkfmt.StreamHandle{Kind: flinkfmt.StreamFile, Name: "file:/old/savepoint/" + sub + "/data", Size: s.Size}
	}
	b, err := flinkfmt.EncodeMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, flinkfmt.MetadataFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	abs, err := flinkfmt.Open(ctx, storage.LocalDir(dir), flinkfmt.Options{PathMap: map[string]string{"/old/savepoint/a": "a", "/old/savepoint/b": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	st := stage(t)
	if _, err := RenameOperator(ctx, abs, st, op.ID.String(), RenameOptions{UID: "sessions"}); err != nil {
		t.Fatal(err)
	}
	out := st.publish(t)
	got := open(t, out).Metadata().Operators[0]
	names := map[string]bool{}
	for i := range 2 {
		s := got.Subtasks[i].ManagedKeyed.Stream
		if s.Kind != flinkfmt.StreamRelativeFile {
			t.Fatalf("subtask %d: a %s stream", i, s.Kind)
		}
		a, _ := os.ReadFile(filepath.Join(dir, []string{"a", "b"}[i], "data"))
		c, err := os.ReadFile(filepath.Join(out, s.Name))
		if err != nil || string(a) != string(c) {
			t.Fatalf("subtask %d: %s not a copy (%v)", i, s.Name, err)
		}
		names[s.Name] = true
	}
	if !names["data"] || len(names) != 2 {
		t.Errorf("names %v", names)
	}
	after := readBack(t, out)
	renamed := &contents{keyed: map[string][]string{}}
	for id, l := range before.keyed {
		renamed.keyed[flinkfmt.UIDHash("sessions").String()+id[len(op.ID.String()):]] = l
	}
	if d := renamed.diff(after); d != "" || len(after.keyed) == 0 {
		t.Fatal(d)
	}
}
