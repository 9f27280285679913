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
	class      uint32
	key, value []byte
}

// sortAll spills recs round-robin over spillers into buckets by class and
// sorts every bucket; it returns what the sorter emitted, bucket by bucket.
func sortAll(t *testing.T, recs []record, spillers, buckets, budget, fanIn int) []record {
	t.Helper()
	dir := t.TempDir()
	sp := make([]*Spiller, spillers)
	for i := range sp {
		sp[i] = NewSpiller(dir, fmt.Sprintf("w%d", i), buckets, 4096)
	}
	for i, r := range recs {
		if err := sp[i%spillers].Add(int(r.class)%buckets, r.class, r.key, r.value); err != nil {
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
		err := srt.Sort(context.Background(), spills, func(class uint32, key, value []byte) error {
			out = append(out, record{class, bytes.Clone(key), bytes.Clone(value)})
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
	return out
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
			bytes.Compare(a.key, b.key), cmp.Compare(a.spiller, b.spiller), cmp.Compare(a.seq, b.seq))
	})
	out := make([]record, len(all))
	for i := range all {
		out[i] = all[i].record
	}
	return out
}

func randomRecords(rng *rand.Rand, n int) []record {
	recs := make([]record, n)
	for i := range recs {
		key := make([]byte, rng.IntN(20))
		for j := range key {
			key[j] = byte(rng.IntN(4)) // few distinct bytes: many equal prefixes and keys
		}
		recs[i] = record{class: uint32(rng.IntN(6)), key: key, value: fmt.Appendf(nil, "v%d", i)}
	}
	return recs
}

func TestSortInMemoryAndWithRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := randomRecords(rng, 20000)
	for _, c := range []struct {
		name          string
		budget, fanIn int
	}{
		{"one chunk", 64 << 20, 64},
		{"runs", 2 * minChunk, 64},
		{"merge passes", 2 * minChunk, 2},
	} {
		got := sortAll(t, recs, 3, 2, c.budget, c.fanIn)
		w := want(recs, 3, 2)
		if len(got) != len(w) {
			t.Fatalf("%s: %d records, want %d", c.name, len(got), len(w))
		}
		for i := range w {
			if got[i].class != w[i].class || !bytes.Equal(got[i].key, w[i].key) || !bytes.Equal(got[i].value, w[i].value) {
				t.Fatalf("%s: record %d: %v, want %v", c.name, i, got[i], w[i])
			}
		}
	}
}

// A record larger than a chunk grows the chunk rather than failing.
func TestSortLargeRecord(t *testing.T) {
	big := bytes.Repeat([]byte{7}, 3*minChunk)
	recs := []record{{1, []byte("b"), []byte("small")}, {1, []byte("a"), big}, {0, []byte("z"), nil}}
	got := sortAll(t, recs, 1, 1, 2*minChunk, 64)
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
