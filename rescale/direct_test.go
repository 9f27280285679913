package rescale_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
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

// countingSource counts the segment reads of a source, and hides the
// readers' NextItems when entriesOnly is set.
type countingSource struct {
	*snapshotfmt.Reader
	entriesOnly bool
	reads       *atomic.Int64
}

func (s countingSource) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	s.reads.Add(1)
	it := s.Reader.Entries(ctx, ref, kgs)
	if s.entriesOnly {
		return struct{ savepoint.EntryIterator }{it}
	}
	return it
}

// rescaleCounting rescales in into out and returns how many segment reads
// it took.
func rescaleCounting(t *testing.T, in, out string, opts rescale.Options, entriesOnly bool) int64 {
	t.Helper()
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(in))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var reads atomic.Int64
	if _, err := rescale.Run(context.Background(), countingSource{r, entriesOnly, &reads}, in, opts, rewrite.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	return reads.Load()
}

// When one max parallelism divides the other by a small factor, the new key
// groups are written straight from the input segments: merged where they
// are fewer, each old segment read once per new key group it feeds where
// they are more. The output is byte for byte the sorting path's, from a
// reader's items and from a source that gives entries one by one, and it
// holds the input's entries. Beyond the factors it takes, the sorting path
// runs.
func TestDirectPathEqualsSortingPath(t *testing.T) {
	for _, tc := range []struct {
		from, to, p, newP int
		compression       snapshotfmt.Codec
		direct            bool
	}{
		{128, 256, 2, 0, snapshotfmt.CodecNone, true},
		{64, 128, 2, 3, snapshotfmt.CodecZstd, true},
		{128, 64, 2, 0, snapshotfmt.CodecNone, true},
		{128, 32, 3, 5, snapshotfmt.CodecNone, true},
		{128, 8, 2, 3, snapshotfmt.CodecNone, true},
		{720, 240, 2, 0, snapshotfmt.CodecZstd, true},
		{2, 1, 2, 1, snapshotfmt.CodecNone, true},
		{128, 384, 2, 0, snapshotfmt.CodecNone, false},
		{128, 4, 2, 0, snapshotfmt.CodecNone, false},
	} {
		t.Run(fmt.Sprintf("%d to %d", tc.from, tc.to), func(t *testing.T) {
			in := generate(t, spgen.Config{Seed: 6, Users: 4000, Accounts: 300, Parallelism: tc.p, MaxParallelism: tc.from, Now: now, Compression: tc.compression})
			r := sptest.Open(t, in)
			all, err := savepoint.AllSegments(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			segs := int64(len(all))
			// The direct path reads each segment once per new key group it
			// feeds, the sorting path once.
			wantReads := segs
			if tc.direct {
				wantReads *= int64(max(1, tc.to/tc.from))
			}
			dir := t.TempDir()
			direct, items, sorted := filepath.Join(dir, "direct"), filepath.Join(dir, "entries"), filepath.Join(dir, "sorted")
			opts := rescale.Options{MaxParallelism: tc.to, Parallelism: tc.newP}
			if reads := rescaleCounting(t, in, direct, opts, false); reads != wantReads {
				t.Fatalf("%d segment reads, want %d (%d segments)", reads, wantReads, segs)
			}
			if reads := rescaleCounting(t, in, items, opts, true); reads != wantReads {
				t.Fatalf("entries only: %d segment reads, want %d", reads, wantReads)
			}
			restore := rescale.SetDirectLimits(0, 0)
			reads := rescaleCounting(t, in, sorted, opts, false)
			restore()
			if reads != segs {
				t.Fatalf("sorting path: %d segment reads, want %d", reads, segs)
			}
			want := sptest.Files(t, sorted)
			for _, out := range []string{direct, items} {
				if got := sptest.Files(t, out); !maps.EqualFunc(got, want, bytes.Equal) {
					t.Fatalf("%s differs from the sorting path's output: %v against %v", filepath.Base(out), slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
				}
			}
			if got, want := sptest.Contents(t, sptest.Open(t, direct)), sptest.Contents(t, r); !maps.EqualFunc(got, want, slices.Equal) {
				t.Fatal("the rescaled savepoint does not hold the same entries")
			}
		})
	}
}

// A corrupt input fails the direct path as it fails the sorting path: with
// the reader's corruption error, and no output.
func TestDirectPathRefusesCorruptInput(t *testing.T) {
	in := generate(t, spgen.Config{Seed: 7, Users: 2000, Accounts: 100, Parallelism: 2, MaxParallelism: 128, Now: now})
	files, err := filepath.Glob(filepath.Join(in, "op001-00001-*.data"))
	if err != nil || len(files) != 1 {
		t.Fatalf("data files %v: %v", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(files[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, to := range []int{256, 64, 720} {
		r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(in))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "out")
		_, err = rescale.Run(context.Background(), r, in, rescale.Options{MaxParallelism: to}, rewrite.Options{Out: out})
		r.Close()
		if !errors.Is(err, savepoint.ErrCorrupt) {
			t.Fatalf("to %d: %v, want a corruption error", to, err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("to %d: the output exists: %v", to, err)
		}
	}
}
