package extsort

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// records returns n records of random lengths up to maxLen, each starting
// with its own sequence number so that no two are equal.
func records(rng *rand.Rand, n, maxLen int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		r := make([]byte, 4+rng.IntN(maxLen+1))
		for j := 4; j < len(r); j++ {
			r[j] = byte(rng.IntN(4)) // few symbols: many shared prefixes
		}
		binary.BigEndian.PutUint32(r, uint32(i))
		out[i] = r
	}
	return out
}

// byTail orders records by their bytes after the sequence number, then by
// the sequence number: a total order.
func byTail(a, b []byte) int {
	if c := bytes.Compare(a[4:], b[4:]); c != 0 {
		return c
	}
	return bytes.Compare(a[:4], b[:4])
}

func sortAll(t *testing.T, o Options, recs [][]byte, writers int) ([][]byte, *Sorter) {
	t.Helper()
	ctx := context.Background()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer adds its share in pieces, taking a writer for
			// each, as a caller with many small inputs does.
			for start := w * 97; start < len(recs); start += writers * 97 {
				wr, err := s.Writer(ctx)
				if err != nil {
					errs[w] = err
					return
				}
				for _, r := range recs[start:min(start+97, len(recs))] {
					if err := wr.Add(r); err != nil {
						errs[w] = err
					}
				}
				if err := wr.Close(); err != nil {
					errs[w] = err
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := s.Added(); got != int64(len(recs)) {
		t.Fatalf("Added = %d, want %d", got, len(recs))
	}
	it, err := s.Sorted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for it.Next() {
		out = append(out, bytes.Clone(it.Record()))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out, s
}

// Every budget, fan-in and number of writers gives the records in order,
// each once: in memory, spilled to runs, and merged in several passes.
func TestSortsWithinAnyBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := records(rng, 20000, 40)
	want := slices.Clone(recs)
	slices.SortFunc(want, byTail)
	for _, c := range []struct {
		memory, writers, fanIn int
		spills                 bool
	}{
		{memory: 64 << 20, writers: 1},
		{memory: 64 << 20, writers: 3},
		{memory: 1 << 10, writers: 1, fanIn: 2, spills: true}, // chunks of minChunk, binary merges
		{memory: 64 << 10, writers: 2, fanIn: 3, spills: true},
		{memory: 256 << 10, writers: 4, spills: true},
	} {
		t.Run(fmt.Sprintf("memory %d writers %d fan-in %d", c.memory, c.writers, c.fanIn), func(t *testing.T) {
			dir := t.TempDir()
			got, s := sortAll(t, Options{Compare: byTail, Memory: c.memory, Writers: c.writers, FanIn: c.fanIn, Dir: dir}, recs, c.writers)
			if len(got) != len(want) {
				t.Fatalf("%d records out, %d in", len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("record %d is %x, want %x", i, got[i], want[i])
				}
			}
			if spilled := s.Spilled() > 0; spilled != c.spills {
				t.Errorf("spilled %d runs; want spills %v", s.Spilled(), c.spills)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("Close left %d files", len(left))
			}
		})
	}
}

// A record larger than a chunk and larger than a run's read buffer sorts
// like any other.
func TestLargeRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	recs := records(rng, 300, 20)
	for i := 0; i < len(recs); i += 50 {
		big := make([]byte, 4+3*readBuffer)
		copy(big, recs[i][:4])
		big[4+rng.IntN(3*readBuffer)] = byte(1 + rng.IntN(3))
		recs[i] = big
	}
	want := slices.Clone(recs)
	slices.SortFunc(want, byTail)
	got, s := sortAll(t, Options{Compare: byTail, Memory: minChunk, Dir: t.TempDir()}, recs, 1)
	if s.Spilled() == 0 {
		t.Fatal("nothing spilled")
	}
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatal("large records out of order")
	}
}

// A run file whose length prefix was damaged is an error naming the file,
// not an allocation of the length.
func TestDamagedRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := New(Options{Compare: byTail, Memory: minChunk, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, _ := s.Writer(ctx)
	for _, r := range records(rand.New(rand.NewPCG(5, 6)), 2000, 30) {
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	runs, _ := filepath.Glob(filepath.Join(dir, "run-*"))
	if len(runs) == 0 {
		t.Fatal("no run file")
	}
	b, _ := os.ReadFile(runs[0])
	b = append(binary.AppendUvarint(nil, 1<<40), b...)
	os.WriteFile(runs[0], b, 0o600)
	// The damaged run fails a merge ahead in Sorted, or the last one.
	it, err := s.Sorted(ctx)
	if err == nil {
		defer it.Close()
		for it.Next() {
		}
		err = it.Err()
	}
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(runs[0])) {
		t.Fatalf("Err = %v, want one naming %s", err, runs[0])
	}
}

func TestMisuse(t *testing.T) {
	ctx := context.Background()
	if _, err := New(Options{}); err == nil {
		t.Error("New without a comparison")
	}
	s, err := New(Options{Compare: bytes.Compare, Writers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, _ := s.Writer(ctx)
	if _, err := s.Sorted(ctx); err == nil {
		t.Error("Sorted with a writer open")
	}
	w.Close()
	if err := w.Add([]byte("x")); err == nil {
		t.Error("Add after Close")
	}
	canceled, cancel := context.WithCancel(ctx)
	w2, _ := s.Writer(ctx)
	cancel()
	if _, err := s.Writer(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Writer with every chunk taken and the context canceled = %v", err)
	}
	w2.Close()
}

func BenchmarkSort(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	recs := records(rng, 1<<18, 40)
	var bytesIn int64
	for _, r := range recs {
		bytesIn += int64(len(r))
	}
	for _, memory := range []int{64 << 20, 1 << 20} {
		b.Run(fmt.Sprintf("memory %d", memory), func(b *testing.B) {
			b.SetBytes(bytesIn)
			for b.Loop() {
				s, _ := New(Options{Compare: byTail, Memory: memory, Dir: b.TempDir()})
				w, _ := s.Writer(context.Background())
				for _, r := range recs {
					w.Add(r)
				}
				w.Close()
				it, err := s.Sorted(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				for it.Next() {
				}
				it.Close()
				s.Close()
			}
		})
	}
}
