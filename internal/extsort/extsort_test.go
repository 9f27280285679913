package extsort

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

type record struct {
	class           uint32
	key, sub, value []byte
}

// sortAll spills recs round-robin over spillers into buckets by class and
// sorts every bucket; it returns what the sorter emitted, bucket by bucket.
func sortAll(t *testing.T, recs []record, spillers, buckets, budget, fanIn int) ([]record, int) {
	t.Helper()
	dir := t.TempDir()
	sp := make([]*Spiller, spillers)
	for i := range sp {
		sp[i] = NewSpiller(dir, fmt.Sprintf("w%d", i), buckets, 4096)
	}
	for i, r := range recs {
		if err := sp[i%spillers].AddSub(int(r.class)%buckets, r.class, r.key, r.sub, r.value); err != nil {
			t.Fatal(err)
		}
	}
	files := make([][]Spill, spillers)
	for i, s := range sp {
		var err error
		if files[i], err = s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	srt := NewSorter(budget, dir, "sort")
	srt.fanIn = fanIn
	var out []record
	for b := range buckets {
		var spills []Spill
		for i := range files {
			spills = append(spills, files[i][b])
		}
		err := srt.SortRecords(context.Background(), spills, func(r *Record) error {
			out = append(out, record{r.Class, bytes.Clone(r.Key), bytes.Clone(r.Sub), bytes.Clone(r.Value)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != spillers*buckets && len(left) > 0 {
		for _, e := range left {
			if !bytes.HasSuffix([]byte(e.Name()), []byte(".spill")) {
				t.Errorf("left behind: %s", e.Name())
			}
		}
	}
	return out, srt.Runs()
}

// want orders recs as the sorter must: bucket by bucket, by class and key,
// equal records in the order of the spill files (spiller, then addition).
func want(recs []record, spillers, buckets int) []record {
	type keyed struct {
		record
		spiller, seq int
	}
	var all []keyed
	for i, r := range recs {
		all = append(all, keyed{r, i % spillers, i})
	}
	slices.SortStableFunc(all, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(int(a.class)%buckets, int(b.class)%buckets), cmp.Compare(a.class, b.class),
			bytes.Compare(a.key, b.key), bytes.Compare(a.sub, b.sub), cmp.Compare(a.spiller, b.spiller), cmp.Compare(a.seq, b.seq))
	})
	out := make([]record, len(all))
	for i := range all {
		out[i] = all[i].record
	}
	return out
}

// randomRecords makes n records of classes below classes times spread:
// spread 1 gives dense classes, which the sorter counts, a larger one
// sparse classes, which it compares.
func randomRecords(rng *rand.Rand, n int, spread uint32) []record {
	recs := make([]record, n)
	for i := range recs {
		key := make([]byte, rng.IntN(20))
		for j := range key {
			key[j] = byte(rng.IntN(4)) // few distinct bytes: many equal prefixes and keys
		}
		var sub []byte
		if rng.IntN(2) == 0 {
			sub = []byte{byte(rng.IntN(3))}
		}
		recs[i] = record{class: uint32(rng.IntN(6)) * spread, key: key, sub: sub, value: fmt.Appendf(nil, "v%d", i)}
	}
	return recs
}

// Records that arrive as ascending runs, as a rescale's do (each input
// segment sorted), sort as any others.
func TestSortAscendingRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	recs := randomRecords(rng, 20000, 1)
	for start := 0; start < len(recs); start += 500 {
		run := recs[start:min(start+500, len(recs))]
		slices.SortStableFunc(run, func(a, b record) int {
			return cmp.Or(bytes.Compare(a.key, b.key), bytes.Compare(a.sub, b.sub))
		})
	}
	for _, budget := range []int{64 << 20, 2 * minChunk} {
		got, _ := sortAll(t, recs, 2, 3, budget, 64)
		w := want(recs, 2, 3)
		for i := range w {
			if got[i].class != w[i].class || !bytes.Equal(got[i].key, w[i].key) || !bytes.Equal(got[i].value, w[i].value) {
				t.Fatalf("budget %d: record %d: %v, want %v", budget, i, got[i], w[i])
			}
		}
	}
}

func TestSortInMemoryAndWithRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name          string
		budget, fanIn int
		// runs is the least number of sorted runs the sort writes.
		runs int
		// spread 1 makes the classes dense.
		spread uint32
	}{
		{"one chunk", 64 << 20, 64, 0, 1},
		{"runs", 2 * minChunk, 64, 8, 1},
		{"merge passes", 2 * minChunk, 2, 14, 1},
		{"sparse classes, one chunk", 64 << 20, 64, 0, 1 << 16},
		{"sparse classes, merge passes", 2 * minChunk, 2, 14, 1 << 16},
	} {
		recs := randomRecords(rng, 20000, c.spread)
		got, runs := sortAll(t, recs, 3, 2, c.budget, c.fanIn)
		if runs < c.runs || c.runs == 0 && runs != 0 {
			t.Errorf("%s: %d sorted runs, want at least %d", c.name, runs, c.runs)
		}
		w := want(recs, 3, 2)
		if len(got) != len(w) {
			t.Fatalf("%s: %d records, want %d", c.name, len(got), len(w))
		}
		for i := range w {
			if got[i].class != w[i].class || !bytes.Equal(got[i].key, w[i].key) || !bytes.Equal(got[i].sub, w[i].sub) || !bytes.Equal(got[i].value, w[i].value) {
				t.Fatalf("%s: record %d: %v, want %v", c.name, i, got[i], w[i])
			}
		}
	}
}

// A record larger than a chunk grows the chunk rather than failing.
func TestSortLargeRecord(t *testing.T) {
	big := bytes.Repeat([]byte{7}, 3*minChunk)
	recs := []record{{1, []byte("b"), nil, []byte("small")}, {1, []byte("a"), nil, big}, {0, []byte("z"), nil, nil}}
	got, _ := sortAll(t, recs, 1, 1, 2*minChunk, 64)
	if len(got) != 3 || got[0].class != 0 || !bytes.Equal(got[1].value, big) || string(got[2].key) != "b" {
		t.Fatalf("%d records: %v", len(got), got[0])
	}
}

func TestSortRefusesTruncatedSpill(t *testing.T) {
	dir := t.TempDir()
	s := NewSpiller(dir, "w", 1, 4096)
	s.Add(0, 1, []byte("key"), []byte("value"))
	files, err := s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(files[0].Path, files[0].Size-2); err != nil {
		t.Fatal(err)
	}
	err = NewSorter(1<<20, dir, "sort").Sort(context.Background(), files, func(uint32, []byte, []byte) error { return nil })
	if err == nil {
		t.Fatal("a truncated spill file sorted")
	}
}

// Spills held in memory sort as their files do, mixed with files, whether
// the bucket fits in one chunk or is merged from runs.
func TestSortSpillsInMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	recs := randomRecords(rng, 20000, 1)
	dir := t.TempDir()
	sp := []*Spiller{NewSpiller(dir, "w0", 1, 4096), NewSpiller(dir, "w1", 1, 4096)}
	for i, r := range recs {
		if err := sp[i%2].AddSub(0, r.class, r.key, r.sub, r.value); err != nil {
			t.Fatal(err)
		}
	}
	var files []Spill
	for _, s := range sp {
		f, err := s.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f[0])
	}
	data, err := os.ReadFile(files[1].Path)
	if err != nil {
		t.Fatal(err)
	}
	w := want(recs, 2, 1)
	for _, budget := range []int{64 << 20, 2 * minChunk} {
		for name, spills := range map[string][]Spill{
			"all in memory":     {{Data: slices.Clone(mustRead(t, files[0].Path))}, {Data: slices.Clone(data)}},
			"memory and a file": {files[0], {Data: slices.Clone(data)}},
		} {
			var got []record
			srt := NewSorter(budget, dir, "sort")
			err := srt.SortRecords(context.Background(), spills, func(r *Record) error {
				got = append(got, record{r.Class, bytes.Clone(r.Key), bytes.Clone(r.Sub), bytes.Clone(r.Value)})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if budget < 1<<20 && srt.Runs() == 0 {
				t.Fatalf("%s: the small budget wrote no runs", name)
			}
			if len(got) != len(w) {
				t.Fatalf("%s, budget %d: %d records, want %d", name, budget, len(got), len(w))
			}
			for i := range w {
				if got[i].class != w[i].class || !bytes.Equal(got[i].key, w[i].key) || !bytes.Equal(got[i].value, w[i].value) {
					t.Fatalf("%s, budget %d: record %d: %v, want %v", name, budget, i, got[i], w[i])
				}
			}
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Two sorters taking turns, each bucket loaded before the one before it is
// emitted (as rescale's writers use them), emit what one sorter does, and
// leave no run files behind.
func TestLoadAheadOfEmit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	recs := randomRecords(rng, 20000, 1)
	const spillers, buckets = 2, 5
	for _, budget := range []int{64 << 20, 2 * minChunk} {
		dir := t.TempDir()
		files := make([][]Spill, spillers)
		for i := range files {
			sp := NewSpiller(dir, fmt.Sprintf("w%d", i), buckets, 4096)
			for j := i; j < len(recs); j += spillers {
				r := recs[j]
				if err := sp.AddSub(int(r.class)%buckets, r.class, r.key, r.sub, r.value); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if files[i], err = sp.Close(); err != nil {
				t.Fatal(err)
			}
		}
		srts := [2]*Sorter{NewSorter(budget, dir, "a"), NewSorter(budget, dir, "b")}
		load := func(b int) {
			var spills []Spill
			for i := range files {
				spills = append(spills, files[i][b])
			}
			if err := srts[b%2].Load(context.Background(), spills); err != nil {
				t.Fatal(err)
			}
		}
		var got []record
		load(0)
		for b := range buckets {
			if b+1 < buckets {
				load(b + 1)
			}
			err := srts[b%2].Emit(context.Background(), func(r *Record) error {
				got = append(got, record{r.Class, bytes.Clone(r.Key), bytes.Clone(r.Sub), bytes.Clone(r.Value)})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		w := want(recs, spillers, buckets)
		if len(got) != len(w) {
			t.Fatalf("budget %d: %d records, want %d", budget, len(got), len(w))
		}
		for i := range w {
			if got[i].class != w[i].class || !bytes.Equal(got[i].key, w[i].key) || !bytes.Equal(got[i].sub, w[i].sub) || !bytes.Equal(got[i].value, w[i].value) {
				t.Fatalf("budget %d: record %d: %v, want %v", budget, i, got[i], w[i])
			}
		}
		if budget < 1<<20 && srts[0].Runs()+srts[1].Runs() == 0 {
			t.Errorf("budget %d: no sorted runs", budget)
		}
		left, _ := os.ReadDir(dir)
		for _, e := range left {
			if !bytes.HasSuffix([]byte(e.Name()), []byte(".spill")) {
				t.Errorf("budget %d: left behind: %s", budget, e.Name())
			}
		}
	}
}

// A Load that fails, here on a spill cut in a record after runs were
// written, leaves no runs and nothing to emit.
func TestFailedLoadLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	var b []byte
	for i := range 5000 {
		b = AppendRecord(b, 1, fmt.Appendf(nil, "key%05d", 5000-i), nil, bytes.Repeat([]byte{1}, 40))
	}
	path := dir + "/cut.spill"
	if err := os.WriteFile(path, b[:len(b)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	srt := NewSorter(2*minChunk, dir, "sort")
	if err := srt.Load(context.Background(), []Spill{{Path: path, Size: int64(len(b) - 3)}}); err == nil {
		t.Fatal("a truncated spill loaded")
	}
	if srt.Runs() == 0 {
		t.Fatal("the spill fitted one chunk: the case of runs left is not tried")
	}
	n := 0
	if err := srt.Emit(context.Background(), func(*Record) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("Emit after a failed Load: %d records, %v", n, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("%d files in the directory, want the spill alone", len(left))
	}
}

// TestChunkReused loads buckets that grow by a few percent, as a caller's
// buckets sized alike do, and checks that the sorter keeps the chunk
// buffer of the first rather than allocating a larger one for each.
func TestChunkReused(t *testing.T) {
	srt := NewSorter(64<<20, t.TempDir(), "sort")
	var first []byte
	for i := range 4 {
		var data []byte
		for k := range 20_000 + 500*i {
			data = AppendRecord(data, uint32(k%7), fmt.Appendf(nil, "key-%06d", k), nil, []byte("value"))
		}
		n := 0
		err := srt.SortRecords(context.Background(), []Spill{{Data: data, Size: int64(len(data))}}, func(*Record) error { n++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if n != 20_000+500*i {
			t.Fatalf("bucket %d: %d records emitted", i, n)
		}
		if i == 0 {
			first = srt.buf[:1]
		} else if &srt.buf[:1][0] != &first[0] {
			t.Fatalf("bucket %d, %d bytes: a new chunk buffer of %d bytes", i, len(data), cap(srt.buf))
		}
	}
}

// A Spiller keeps all its buckets in one file, each bucket's records in
// chunks among the others'; every bucket reads back exactly its own, in
// order, also after the buckets before it were released.
func TestSpillerSharesOneFile(t *testing.T) {
	const buckets = 8
	rng := rand.New(rand.NewPCG(3, 4))
	var recs []record
	for i := range 40000 {
		recs = append(recs, record{class: uint32(rng.IntN(buckets)), key: fmt.Appendf(nil, "k%06d", rng.IntN(1000)), value: fmt.Appendf(nil, "v%d-%s", i, bytes.Repeat([]byte("x"), rng.IntN(40)))})
	}
	dir := t.TempDir()
	s := NewSpiller(dir, "w0", buckets, 4096)
	for _, r := range recs {
		if err := s.Add(int(r.class), r.class, r.key, r.value); err != nil {
			t.Fatal(err)
		}
	}
	spills, err := s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files in the spill directory, want 1", len(entries))
	}
	var total int64
	for b, sp := range spills {
		if len(sp.Chunks) < 2 || sp.Path != spills[0].Path {
			t.Fatalf("bucket %d: %d chunks of %s, want several of one shared file", b, len(sp.Chunks), sp.Path)
		}
		var n int64
		for _, c := range sp.Chunks {
			n += c.Len
		}
		if n != sp.Size {
			t.Fatalf("bucket %d: chunks of %d bytes, size %d", b, n, sp.Size)
		}
		total += n
	}
	if st, err := os.Stat(spills[0].Path); err != nil || st.Size() != total {
		t.Fatalf("spill file: %v, %d bytes, want the buckets' %d", err, st.Size(), total)
	}
	srt := NewSorter(64<<20, dir, "sort")
	w := want(recs, 1, buckets)
	var got []record
	for b := range buckets {
		err := srt.SortRecords(context.Background(), spills[b:b+1], func(r *Record) error {
			got = append(got, record{r.Class, bytes.Clone(r.Key), nil, bytes.Clone(r.Value)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		Release(spills[b : b+1])
	}
	if len(got) != len(w) {
		t.Fatalf("%d records, want %d", len(got), len(w))
	}
	for i := range w {
		if got[i].class != w[i].class || !bytes.Equal(got[i].key, w[i].key) || !bytes.Equal(got[i].value, w[i].value) {
			t.Fatalf("record %d: %q %q, want %q %q", i, got[i].key, got[i].value, w[i].key, w[i].value)
		}
	}
}
