package rescale

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
)

// recorder is a sink that renders what it receives, one line per entry.
type recorder struct {
	h     header
	lines []string
}

func (r *recorder) group(h *header) error {
	r.h = header{kg: h.kg, ref: h.ref, time: h.time, key: bytes.Clone(h.key), ns: bytes.Clone(h.ns)}
	if h.ref == 2 {
		r.lines = append(r.lines, fmt.Sprintf("%d %d %d %q %q", h.kg, h.ref, h.time, h.key, h.ns))
	}
	return nil
}

func (r *recorder) item(framed, v []byte) error {
	r.lines = append(r.lines, fmt.Sprintf("%d %d %q %q %x %x", r.h.kg, r.h.ref, r.h.key, r.h.ns, framed, v))
	return nil
}

// A bucket sorts to the same entries whether it fits in memory or is cut
// into many chunks (groups split between them, values larger than a chunk)
// merged in several passes.
func TestSorterChunksAndMerges(t *testing.T) {
	shapes := []refShape{{}, {isMap: true}, {timer: true}}
	kgs := keygroup.Range{Start: 10, End: 19}
	rng := rand.New(rand.NewPCG(3, 4))
	type g struct {
		h     header
		items [][2][]byte
	}
	var groups []g
	seen := map[string]bool{}
	for len(groups) < 3000 {
		h := header{kg: kgs.Start + rng.IntN(kgs.Len()), ref: rng.IntN(3), key: fmt.Appendf(nil, "k%d", rng.IntN(500)), ns: fmt.Appendf(nil, "%d", rng.IntN(3))}
		if h.ref == 2 {
			h.time = rng.Int64N(1000) - 500
		}
		id := fmt.Sprintf("%d %d %d %s %s", h.kg, h.ref, h.time, h.key, h.ns)
		if seen[id] {
			continue
		}
		seen[id] = true
		gr := g{h: h}
		if h.ref != 2 {
			for j := range 1 + rng.IntN(6) {
				v := bytes.Repeat([]byte{byte(j)}, 1+rng.IntN(20))
				if rng.IntN(500) == 0 {
					v = bytes.Repeat([]byte{'L'}, 20_000)
				}
				var mk []byte
				if h.ref == 1 {
					mk = fmt.Appendf(nil, "m%02d", j)
				}
				gr.items = append(gr.items, [2][]byte{mk, v})
			}
		}
		groups = append(groups, gr)
	}
	// Two spill files, as two partition workers would write them.
	dir := t.TempDir()
	var paths []string
	var size int64
	for f := range 2 {
		var b []byte
		for i := f; i < len(groups); i += 2 {
			b = appendHeader(b, &groups[i].h, shapes[groups[i].h.ref].timer)
			for _, it := range groups[i].items {
				b = appendItem(b, shapes[groups[i].h.ref].isMap, it[0], it[1])
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("spill%d", f))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		size += int64(len(b))
	}
	slices.SortFunc(groups, func(a, b g) int {
		return cmp.Or(cmp.Compare(a.h.kg, b.h.kg), cmp.Compare(a.h.ref, b.h.ref), cmp.Compare(a.h.time, b.h.time),
			bytes.Compare(a.h.key, b.h.key), bytes.Compare(a.h.ns, b.h.ns))
	})
	want := &recorder{}
	for _, gr := range groups {
		want.group(&gr.h)
		for _, it := range gr.items {
			// The item as the format frames it: the spill item after its tag.
			want.item(appendItem(nil, gr.h.ref == 1, it[0], it[1])[1:], it[1])
		}
	}
	for _, tc := range []struct {
		name          string
		budget, fanIn int
	}{{"in memory", 64 << 20, 64}, {"chunks, one merge", 64 << 10, 64}, {"chunks, merges in passes", 2 << 10, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sorter{shapes: shapes, budget: tc.budget, dir: t.TempDir(), name: "t", fanIn: tc.fanIn}
			got := &recorder{}
			if err := s.sortBucket(context.Background(), paths, size, kgs, got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.lines, want.lines) {
				t.Fatalf("%d lines, want %d", len(got.lines), len(want.lines))
			}
			if left, _ := os.ReadDir(s.dir); len(left) != 0 {
				t.Fatalf("run files left: %d", len(left))
			}
		})
	}
}
