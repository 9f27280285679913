package flinkrewrite

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/rewrite"
)

// Every reference savepoint whose metadata this package writes gets, in
// turn, its last operator removed or its first renamed: the output's
// metadata is
// the input's with exactly that change, byte for byte as Flink's serializer
// writes it; every file it refers to is a copy of the input's; the
// savepoint reads back with the same state for every other operator.
func TestRemoveAndRenameEveryFixture(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var removed, renamed, files, refused int
	t.Run("fixtures", func(t *testing.T) {
		for i, dir := range fixtures(t) {
			name := strings.ReplaceAll(strings.TrimPrefix(dir, filepath.Dir(filepath.Dir(dir))+"/"), "/", "_")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r := open(t, dir)
				m := r.Metadata()
				if len(m.Operators) == 0 {
					return
				}
				st := stage(t)
				if i%2 == 0 {
					last := m.Operators[len(m.Operators)-1]
					rep, err := RemoveOperator(ctx, r, st, last.ID.String(), Options{})
					if errors.Is(err, rewrite.ErrRefused) && errors.Is(err, flinkfmt.ErrUnsupported) {
						mu.Lock()
						refused++
						mu.Unlock()
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if rep.ID != last.ID.String() || rep.Action != "remove" {
						t.Errorf("report %+v", rep)
					}
					out := st.publish(t)
					want := *m
					want.Operators = m.Operators[:len(m.Operators)-1]
					n := checkMetadata(t, dir, out, &want)
					keptBack(t, dir, out, last.ID, last.ID)
					mu.Lock()
					removed++
					files += n
					mu.Unlock()
					return
				}
				first := m.Operators[0]
				rep, err := RenameOperator(ctx, r, st, first.ID.String(), RenameOptions{UID: "renamed-by-stateproc", Name: "Renamed"})
				if errors.Is(err, rewrite.ErrRefused) && errors.Is(err, flinkfmt.ErrUnsupported) {
					mu.Lock()
					refused++
					mu.Unlock()
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				out := st.publish(t)
				c := *first
				c.ID = flinkfmt.UIDHash("renamed-by-stateproc")
				if m.Version >= 5 {
					c.UID, c.Name = "renamed-by-stateproc", "Renamed"
				}
				if rep.NewID != c.ID.String() || rep.NewUID != c.UID || rep.NewName != c.Name && m.Version >= 5 {
					t.Errorf("report %+v", rep)
				}
				want := *m
				want.Operators = append([]*flinkfmt.Operator{&c}, m.Operators[1:]...)
				n := checkMetadata(t, dir, out, &want)
				keptBack(t, dir, out, first.ID, c.ID)
				mu.Lock()
				renamed++
				files += n
				mu.Unlock()
			})
		}
	})
	t.Logf("%d fixtures with an operator removed, %d with one renamed, %d referenced files copied byte for byte; %d refused (changelog handles)", removed, renamed, files, refused)
	if removed+renamed < 280 || refused != 5 {
		t.Errorf("%d removed, %d renamed, %d refused", removed, renamed, refused)
	}
}

// checkMetadata checks that the output's _metadata is want encoded and that
// every file it refers to holds the bytes of the input's file of that name.
func checkMetadata(t *testing.T, in, out string, want *flinkfmt.Metadata) int {
	t.Helper()
	b, err := flinkfmt.EncodeMetadata(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, flinkfmt.MetadataFile))
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("the output's metadata is not the expected one (%v)", err)
	}
	n := 0
	forEachStream(want, func(s *flinkfmt.StreamHandle) {
		if s.Kind != flinkfmt.StreamRelativeFile {
			return
		}
		a, errA := os.ReadFile(filepath.Join(in, s.Name))
		b, errB := os.ReadFile(filepath.Join(out, s.Name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s: not copied (%v, %v)", s.Name, errA, errB)
		}
		n++
	})
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > n+1 {
		t.Errorf("%d files in the output, %d referenced", len(entries), n)
	}
	return n
}

// keptBack checks that the output reads back with the input's state, the
// operator from renamed to to, or left out when from equals to.
func keptBack(t *testing.T, in, out string, from, to flinkfmt.OperatorID) {
	t.Helper()
	a, b := readBackUnless(t, in), readBackUnless(t, out)
	if a == nil || b == nil {
		return
	}
	for _, m := range []map[string][]string{a.keyed, a.operator} {
		for id, l := range m {
			if strings.HasPrefix(id, from.String()+"/") {
				delete(m, id)
				if from != to {
					m[to.String()+id[len(from.String()):]] = l
				}
			}
		}
	}
	if d := a.diff(b); d != "" {
		t.Fatal(d)
	}
}

// readBackUnless reads a savepoint back unless some of its state is in a
// layout the reader does not read (native RocksDB, changelog).
func readBackUnless(t *testing.T, dir string) *contents {
	r := open(t, dir)
	for _, op := range r.Metadata().Operators {
		if _, err := r.Keyed(context.Background(), op); errors.Is(err, flinkfmt.ErrUnsupported) {
			return nil
		}
		for _, st := range op.Subtasks {
			if l := flinkfmt.HandleLayout(st.ManagedKeyed); l == flinkfmt.LayoutRocksDBNative || l == flinkfmt.LayoutChangelog {
				return nil
			}
		}
	}
	return readBack(t, dir)
}

func TestRenameRefusals(t *testing.T) {
	dirs := fixtures(t)
	var dir string
	for _, d := range dirs {
		if strings.HasSuffix(d, "new-stateful-udf-migration-itcase-flink2.0-rocksdb-savepoint") {
			dir = d
		}
	}
	r := open(t, dir)
	m := r.Metadata()
	if len(m.Operators) < 2 || m.Version != 5 {
		t.Fatalf("%d operators, version %d", len(m.Operators), m.Version)
	}
	a, b := m.Operators[0], m.Operators[1]
	ctx := context.Background()
	for _, c := range []struct {
		ref, uid, want string
	}{
		{"no-such-operator", "x", "neither an operator id"},
		{a.ID.String(), "", "new uid is empty"},
		{a.ID.String(), b.UID, "already has"},
	} {
		st := stage(t)
		_, err := RenameOperator(ctx, r, st, c.ref, RenameOptions{UID: c.uid})
		if !errors.Is(err, rewrite.ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rename %s to %q: %v", c.ref, c.uid, err)
		}
		st.Abort()
	}
	if _, err := RemoveOperator(ctx, r, nil, "no-such-operator", Options{}); !errors.Is(err, rewrite.ErrRefused) {
		t.Errorf("remove of an unknown operator: %v", err)
	}
	// A dry run reports and writes nothing.
	rep, err := RemoveOperator(ctx, r, nil, a.UID, Options{})
	if err != nil || !rep.DryRun || rep.ID != a.ID.String() {
		t.Errorf("dry run: %+v, %v", rep, err)
	}
}
