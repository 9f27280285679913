package detgen

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHashIsAPureFunctionAndFieldsDiffer(t *testing.T) {
	first, again := Hash(7, 42, 1), Hash(7, 42, 1)
	if first != again {
		t.Fatal("Hash is not deterministic")
	}
	seen := map[uint64]bool{}
	for _, in := range [][3]uint64{{7, 42, 1}, {7, 42, 2}, {7, 43, 1}, {8, 42, 1}, {0, 0, 0}} {
		h := Hash(int64(in[0]), in[1], Field(in[2]))
		if seen[h] {
			t.Fatalf("Hash%v collides with another input", in)
		}
		seen[h] = true
	}
}

func TestBelowIsRoughlyUniform(t *testing.T) {
	const n, draws = 10, 100000
	var counts [n]int
	for i := uint64(0); i < draws; i++ {
		counts[Below(1, i, 3, n)]++
	}
	for v, c := range counts {
		if c < draws/n*9/10 || c > draws/n*11/10 {
			t.Errorf("value %d drawn %d times of %d", v, c, draws)
		}
	}
}

func TestShareDealsRoundRobin(t *testing.T) {
	for _, n := range []int64{0, 1, 7, 8, 9, 1001} {
		var sum int64
		for s := 0; s < 8; s++ {
			got := Share(n, s, 8)
			sum += got
			if lo := n / 8; got != lo && got != lo+1 {
				t.Errorf("Share(%d, %d, 8) = %d", n, s, got)
			}
		}
		if sum != n {
			t.Errorf("shares of %d add up to %d", n, sum)
		}
	}
}

func TestHeapSorts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := NewHeap(0, func(a, b int) bool { return a < b })
	var want []int
	for i := 0; i < 500; i++ {
		v := r.IntN(100)
		want = append(want, v)
		h.Push(v)
	}
	h.ReplaceMin(h.Min())
	slices.Sort(want)
	var got []int
	for h.Len() > 0 {
		got = append(got, h.Pop())
	}
	if !slices.Equal(got, want) {
		t.Fatal("heap does not pop in order")
	}
}
