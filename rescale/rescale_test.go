package rescale_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

const now = 1_700_000_000_000

func generate(t testing.TB, cfg spgen.Config) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(dir, cfg); err != nil {
		t.Fatal(err)
	}
	return dir
}

func run(t testing.TB, in string, opts rescale.Options, out string) *rescale.Report {
	t.Helper()
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(in))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := rescale.Run(context.Background(), r, in, opts, rewrite.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Every entry of every keyed state and timer service lands in the key
// group its key hashes to under the new max parallelism (Verify checks
// that and the order), and the savepoint holds the same entries as before,
// in the same order within each key.
func TestRescaleMovesEveryEntry(t *testing.T) {
	for _, tc := range []struct {
		name          string
		from, to      int
		p, newP       int
		compression   snapshotfmt.Codec
		wantFilesOfOp int
	}{
		{"grow", 128, 720, 2, 7, snapshotfmt.CodecNone, 7},
		{"shrink", 720, 128, 3, 0, snapshotfmt.CodecZstd, 3},
		{"coprime", 97, 128, 1, 4, snapshotfmt.CodecNone, 4},
		{"to one", 128, 1, 2, 1, snapshotfmt.CodecNone, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := generate(t, spgen.Config{Seed: 1, Users: 3000, Accounts: 500, Parallelism: tc.p, MaxParallelism: tc.from, Now: now, Compression: tc.compression})
			out := filepath.Join(t.TempDir(), "out")
			rep := run(t, in, rescale.Options{MaxParallelism: tc.to, Parallelism: tc.newP}, out)
			before, after := sptest.Open(t, in), sptest.Open(t, out)
			if got, want := sptest.Contents(t, after), sptest.Contents(t, before); !maps.EqualFunc(got, want, slices.Equal) {
				t.Fatal("the rescaled savepoint does not hold the same entries")
			}
			m := after.Metadata()
			wantP := tc.newP
			if wantP == 0 {
				wantP = tc.p
			}
			for i, op := range m.Operators {
				if op.Keyed() && (op.MaxParallelism != tc.to || op.Parallelism != wantP) {
					t.Fatalf("operator %s: max parallelism %d, parallelism %d", op.UID, op.MaxParallelism, op.Parallelism)
				}
				if !op.Keyed() && op.MaxParallelism != tc.from {
					t.Fatalf("non-keyed operator %s changed max parallelism to %d", op.UID, op.MaxParallelism)
				}
				if !op.Keyed() && len(op.OperatorStates[0].Subtasks) != tc.p {
					t.Fatalf("non-keyed operator %s: operator state of %d subtasks", op.UID, len(op.OperatorStates[0].Subtasks))
				}
				_ = i
			}
			if n := len(after.DataFiles()); n != 2*tc.wantFilesOfOp {
				t.Fatalf("%d data files, want %d per keyed operator: %v", n, tc.wantFilesOfOp, after.DataFiles())
			}
			if len(m.Lineage) != 1 {
				t.Fatalf("lineage %q", m.Lineage)
			}
			for _, o := range rep.Operators {
				if o.Keyed && o.Action != rescale.Rebucketed {
					t.Fatalf("report: %+v", o)
				}
			}
		})
	}
}

// The output does not depend on the number of workers or on the memory
// budget, which sets whether the spill records stay in memory, how the new
// key groups are split into buckets and how large the sort chunks are
// (TestSpillRecordsSortIntoOutputOrder covers buckets larger than a
// chunk).
func TestRescaleIsDeterministic(t *testing.T) {
	in := generate(t, spgen.Config{Seed: 2, Users: 12000, Accounts: 1000, Parallelism: 2, MaxParallelism: 128, Now: now, Pad: 40})
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	run(t, in, rescale.Options{MaxParallelism: 300}, a)
	run(t, in, rescale.Options{MaxParallelism: 300, Workers: 1, Memory: 64 << 10}, b)
	fa, fb := sptest.Files(t, a), sptest.Files(t, b)
	if !maps.EqualFunc(fa, fb, bytes.Equal) {
		t.Fatal("the output depends on workers and memory")
	}
	if got, want := sptest.Contents(t, sptest.Open(t, b)), sptest.Contents(t, sptest.Open(t, in)); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatal("entries differ")
	}
}

// A group spilled in pieces (a list or map whose items pass the piece
// limit) is written as the one record it was: cut after every item, the
// output is byte for byte the same.
func TestGroupsSpilledInPieces(t *testing.T) {
	in := generate(t, spgen.Config{Seed: 4, Users: 3000, Accounts: 200, Parallelism: 2, MaxParallelism: 128, Now: now})
	src := sptest.Open(t, in)
	// Groups of several items, by state kind: what the cut applies to.
	several := map[bool]int{}
	for _, es := range sptest.KeyedState(t, src) {
		for i := 1; i < len(es); i++ {
			if bytes.Equal(es[i].Key, es[i-1].Key) && bytes.Equal(es[i].Namespace, es[i-1].Namespace) {
				several[es[i].MapKey != nil]++
			}
		}
	}
	if several[false] == 0 || several[true] == 0 {
		t.Fatalf("no list or map groups of several items to cut: %v", several)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	run(t, in, rescale.Options{MaxParallelism: 720}, a)
	// Cut after every item, with chunks small enough that the pieces of a
	// group land in different sorted runs too.
	// The reader's records come whole, so the cut applies where entries
	// come one by one, as from other layouts.
	restore := rescale.SetPieceLimit(1)
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(in))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := rescale.Run(context.Background(), entriesOnly{r}, in, rescale.Options{MaxParallelism: 720, Workers: 1, Memory: 64 << 10},
		rewrite.Options{Out: b}); err != nil {
		t.Fatal(err)
	}
	restore()
	if fa, fb := sptest.Files(t, a), sptest.Files(t, b); !maps.EqualFunc(fa, fb, bytes.Equal) {
		t.Fatal("the output depends on how groups were cut into pieces")
	}
}

// entriesOnly is a source whose iterators give entries one by one.
type entriesOnly struct{ *snapshotfmt.Reader }

func (s entriesOnly) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	return struct{ savepoint.EntryIterator }{s.Reader.Entries(ctx, ref, kgs)}
}

// Changing only the parallelism touches the metadata only: the data files
// are the input's, byte for byte, and operator list state is split anew.
func TestParallelismOnly(t *testing.T) {
	in := generate(t, spgen.Config{Seed: 3, Users: 2000, Accounts: 100, Parallelism: 2, MaxParallelism: 128, Now: now})
	out := filepath.Join(t.TempDir(), "out")
	rep := run(t, in, rescale.Options{MaxParallelism: 128, Parallelism: 5}, out)
	for _, o := range rep.Operators {
		if o.Keyed && o.Action != rescale.ParallelismOnly {
			t.Fatalf("report: %+v", o)
		}
	}
	fin, fout := sptest.DataFiles(t, in), sptest.DataFiles(t, out)
	if !maps.EqualFunc(fin, fout, bytes.Equal) {
		t.Fatal("data files changed")
	}
	r := sptest.Open(t, out)
	if op, _ := r.Metadata().Operator("features"); op.Parallelism != 5 {
		t.Fatalf("parallelism %d", op.Parallelism)
	}
	// A keyed operator's list state is split over the new subtasks, in
	// order, as the engine would hand it out on restore.
	before, _ := sptest.Open(t, in).Metadata().Operator("accounts")
	after, _ := r.Metadata().Operator("accounts")
	concat := func(subtasks [][][]byte) (all [][]byte) {
		for _, l := range subtasks {
			all = append(all, l...)
		}
		return all
	}
	if s := after.OperatorStates[0].Subtasks; len(s) != 5 || !slices.EqualFunc(concat(s), concat(before.OperatorStates[0].Subtasks), bytes.Equal) {
		t.Fatalf("operator state over %d subtasks: %q", len(s), s)
	}
}

// --operator rescales one operator; the others are copied as they were.
func TestRescaleOneOperator(t *testing.T) {
	in := generate(t, spgen.Config{Seed: 4, Users: 2000, Accounts: 300, Parallelism: 2, MaxParallelism: 128, Now: now})
	out := filepath.Join(t.TempDir(), "out")
	run(t, in, rescale.Options{MaxParallelism: 256, Operator: "accounts", Parallelism: 3}, out)
	r := sptest.Open(t, out)
	f, _ := r.Metadata().Operator("features")
	a, _ := r.Metadata().Operator("accounts")
	if f.MaxParallelism != 128 || f.Parallelism != 2 || a.MaxParallelism != 256 || a.Parallelism != 3 {
		t.Fatalf("features %d/%d, accounts %d/%d", f.Parallelism, f.MaxParallelism, a.Parallelism, a.MaxParallelism)
	}
	fin, fout := sptest.Files(t, in), sptest.Files(t, out)
	for _, name := range []string{"op001-00000.data", "op001-00001.data"} {
		if !bytes.Equal(fin[name], fout[name]) {
			t.Fatalf("%s changed", name)
		}
	}
	if got, want := sptest.Contents(t, r), sptest.Contents(t, sptest.Open(t, in)); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatal("entries differ")
	}
}

// Requests that cannot succeed are refused before anything is written.
func TestRescaleRefusals(t *testing.T) {
	in := generate(t, spgen.Config{Seed: 5, Users: 100, Accounts: 10, Parallelism: 4, MaxParallelism: 128, Now: now})
	for _, opts := range []rescale.Options{
		{MaxParallelism: 0},
		{MaxParallelism: 40000},
		{MaxParallelism: 3},
		{MaxParallelism: 64, Parallelism: 65},
		{MaxParallelism: 64, Operator: "nope"},
		{MaxParallelism: 64, Operator: "source"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		r := sptest.Open(t, in)
		_, err := rescale.Run(context.Background(), r, in, opts, rewrite.Options{Out: out})
		if !errors.Is(err, rewrite.ErrRefused) {
			t.Fatalf("%+v: %v, want a refusal", opts, err)
		}
		if ents, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*")); len(ents) != 0 {
			t.Fatalf("%+v: wrote %v", opts, ents)
		}
	}
}
