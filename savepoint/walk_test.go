package savepoint_test

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// A walk that starts its segments ahead gives every segment the entries
// SegmentEntries gives, on workers that take them in order, and a walk
// left after a few segments closes what it started ahead and leaves no
// goroutine behind.
func TestStartAheadGivesEverySegment(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sp")
	if err := spgen.Write(dir, spgen.Config{Seed: 3, Users: 200, Accounts: 20, Parallelism: 2, MaxParallelism: 64, Now: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	src := sptest.Open(t, dir)
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 20 {
		t.Fatalf("%d segments, want many", len(segs))
	}
	for _, depth := range []int{1, 3, 100} {
		got := make([][]savepoint.Entry, len(segs))
		w := savepoint.StartAhead(ctx, src, segs, depth, 1<<30)
		err := workers.Run(ctx, len(segs), 3, func(ctx context.Context, _, i int) error {
			it := w.Entries(ctx, i)
			defer it.Close()
			for it.Next() {
				e := *it.Entry()
				e.Key, e.Namespace, e.MapKey, e.Value = slices.Clone(e.Key), slices.Clone(e.Namespace), slices.Clone(e.MapKey), slices.Clone(e.Value)
				got[i] = append(got[i], e)
			}
			return it.Err()
		})
		w.Close()
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		for i, seg := range segs {
			want := sptest.SegmentEntries(t, src, seg)
			if len(got[i]) != len(want) || len(want) == 0 {
				t.Fatalf("depth %d, segment %d: %d entries, want %d", depth, i, len(got[i]), len(want))
			}
			for j := range want {
				if string(got[i][j].Key) != string(want[j].Key) || string(got[i][j].Value) != string(want[j].Value) || string(got[i][j].MapKey) != string(want[j].MapKey) {
					t.Fatalf("depth %d, segment %d, entry %d differs", depth, i, j)
				}
			}
		}
	}
	before := runtime.NumGoroutine()
	w := savepoint.StartAhead(ctx, src, segs, 8, 1<<30)
	for i := range 3 {
		it := w.Entries(ctx, i)
		if !it.Next() {
			t.Fatalf("segment %d: no entry: %v", i, it.Err())
		}
		it.Close()
	}
	w.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the walk was closed, %d before", n, before)
	}
}

// startCounter counts the iterators a walk starts.
type startCounter struct {
	savepoint.Source
	started atomic.Int64
}

func (s *startCounter) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	s.started.Add(1)
	return s.Source.Entries(ctx, ref, kgs)
}

// A walk starts no segment ahead past its budget of stored bytes, however
// deep it may go: with none, only the segment asked for; with the length
// of the two segments after it, at most those.
func TestStartAheadKeepsToItsBudget(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sp")
	if err := spgen.Write(dir, spgen.Config{Seed: 3, Users: 200, Accounts: 20, Parallelism: 2, MaxParallelism: 64, Now: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	segs, err := savepoint.AllSegments(ctx, sptest.Open(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, ahead := range []int{0, 2} {
		src := &startCounter{Source: sptest.Open(t, dir)}
		var budget int64
		for _, s := range segs[1 : 1+ahead] {
			budget = max(budget, s.Length)
		}
		budget *= int64(ahead)
		w := savepoint.StartAhead(ctx, src, segs, 100, budget)
		for i := range segs {
			it := w.Entries(ctx, i)
			for it.Next() {
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			it.Close()
			// Of the segments after i, as many as fit the budget.
			fit, sum := 0, int64(0)
			for j := i + 1; j < len(segs) && sum+segs[j].Length <= budget; j++ {
				sum += segs[j].Length
				fit++
			}
			if n := src.started.Load(); n > int64(i+1+fit) {
				t.Fatalf("ahead %d: %d iterators started when segment %d was taken, want at most %d", ahead, n, i, i+1+fit)
			}
		}
		w.Close()
	}
}

// primingSource gives iterators that are Primers and ValueBatchers.
type primingSource struct{ savepoint.Source }

func (s primingSource) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	return &primingIterator{EntryIterator: s.Source.Entries(ctx, ref, kgs)}
}

// primingIterator counts its primes, and whether one came before its
// first entry.
type primingIterator struct {
	savepoint.EntryIterator
	primes       int
	primedBefore bool
	begun        bool
}

func (it *primingIterator) Prime() {
	it.primes++
	it.primedBefore = !it.begun
}

func (it *primingIterator) Next() bool {
	it.begun = true
	return it.EntryIterator.Next()
}

func (it *primingIterator) NextValues(sizes []int, lastModified []int64) int {
	it.begun = true
	return savepoint.NextValues(it.EntryIterator, false, sizes, lastModified)
}

// A walk gives a worker an iterator that can prime itself as it is, primed
// once before its first entry, so that the worker has its batch methods.
func TestStartAheadPrimesAndKeepsTheIterator(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sp")
	if err := spgen.Write(dir, spgen.Config{Seed: 5, Users: 100, Accounts: 10, Parallelism: 2, MaxParallelism: 32, Now: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	plain := sptest.Open(t, dir)
	src := primingSource{plain}
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	w := savepoint.StartAhead(ctx, src, segs, 4, 1<<30)
	defer w.Close()
	for i, seg := range segs {
		it := w.Entries(ctx, i)
		p, ok := it.(*primingIterator)
		if !ok {
			t.Fatalf("segment %d: the walk gave a %T, not the source's iterator", i, it)
		}
		if p.primes != 1 || !p.primedBefore {
			t.Fatalf("segment %d: primed %d times, before its first entry: %v", i, p.primes, p.primedBefore)
		}
		var sizes [7]int
		var times [7]int64
		got := 0
		for seg.Ref.Timer && it.Next() {
			got++
		}
		for !seg.Ref.Timer {
			n := savepoint.NextValues(it, false, sizes[:], times[:])
			got += n
			if n < len(sizes) {
				break
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		if want := len(sptest.SegmentEntries(t, plain, seg)); got != want || want == 0 {
			t.Fatalf("segment %d: %d values, want %d", i, got, want)
		}
	}
}
