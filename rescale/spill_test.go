package rescale

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/internal/extsort"
)

// A bucket's spill records sort into the order the output takes, (key
// group, ref, time, key, namespace), with the items of each group in their
// order, whether it fits in memory or is cut into many chunks (groups split
// into pieces, values larger than a chunk) merged in several passes.
func TestSpillRecordsSortIntoOutputOrder(t *testing.T) {
	shapes := []refShape{{}, {isMap: true}, {timer: true}}
	type g struct {
		kg, ref int
		time    int64
		key, ns []byte
		items   [][2][]byte
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var groups []g
	seen := map[string]bool{}
	for len(groups) < 3000 {
		gr := g{kg: 10 + rng.IntN(10), ref: rng.IntN(3), key: fmt.Appendf(nil, "k%d", rng.IntN(500)), ns: fmt.Appendf(nil, "%d", rng.IntN(3))}
		if gr.ref == 2 {
			gr.time = rng.Int64N(1000) - 500
		}
		id := fmt.Sprintf("%d %d %d %s %s", gr.kg, gr.ref, gr.time, gr.key, gr.ns)
		if seen[id] {
			continue
		}
		seen[id] = true
		if gr.ref != 2 {
			for j := range 1 + rng.IntN(6) {
				v := bytes.Repeat([]byte{byte(j)}, 1+rng.IntN(20))
				if rng.IntN(500) == 0 {
					v = bytes.Repeat([]byte{'L'}, 200_000)
				}
				var mk []byte
				if gr.ref == 1 {
					mk = fmt.Appendf(nil, "m%02d", j)
				}
				gr.items = append(gr.items, [2][]byte{mk, v})
			}
		}
		groups = append(groups, gr)
	}
	// Two workers' spill files; a group's items in pieces of at most
	// 30 bytes, as a partitioner with that piece limit spills them.
	dir := t.TempDir()
	var files []extsort.Spill
	for w := range 2 {
		sp := extsort.NewSpiller(dir, fmt.Sprintf("w%d", w), 1, 4096)
		for i := w; i < len(groups); i += 2 {
			gr := &groups[i]
			class := spillClass(shapes, gr.kg, gr.ref)
			if gr.ref == 2 {
				if err := sp.AddSub(0, class, appendTimerKey(nil, gr.time, gr.key), gr.ns, nil); err != nil {
					t.Fatal(err)
				}
				continue
			}
			var items []byte
			for j, it := range gr.items {
				items = appendItem(items, shapes[gr.ref].isMap, it[0], it[1])
				if len(items) >= 30 || j == len(gr.items)-1 {
					if err := sp.AddSub(0, class, gr.key, gr.ns, items); err != nil {
						t.Fatal(err)
					}
					items = nil
				}
			}
		}
		f, err := sp.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f[0])
	}
	slices.SortFunc(groups, func(a, b g) int {
		return cmp.Or(cmp.Compare(a.kg, b.kg), cmp.Compare(a.ref, b.ref), cmp.Compare(a.time, b.time),
			bytes.Compare(a.key, b.key), bytes.Compare(a.ns, b.ns))
	})
	var want []string
	for _, gr := range groups {
		if gr.ref == 2 {
			want = append(want, fmt.Sprintf("%d %d %d %q %q", gr.kg, gr.ref, gr.time, gr.key, gr.ns))
		}
		if len(gr.items) > 0 {
			var items []byte
			for _, it := range gr.items {
				items = appendItem(items, gr.ref == 1, it[0], it[1])
			}
			want = append(want, fmt.Sprintf("%d %d %q %q %x", gr.kg, gr.ref, gr.key, gr.ns, items))
		}
	}
	for _, tc := range []struct {
		name   string
		budget int
	}{{"in memory", 64 << 20}, {"chunks merged", 256 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			srt := extsort.NewSorter(tc.budget, t.TempDir(), "t")
			err := srt.SortRecords(context.Background(), files, func(r *extsort.Record) error {
				kg, ref := int(r.Class)/len(shapes), int(r.Class)%len(shapes)
				if ref == 2 {
					tm, key, err := splitTimerKey(r.Key)
					got = append(got, fmt.Sprintf("%d %d %d %q %q", kg, ref, tm, key, r.Sub))
					return err
				}
				// The pieces of one group come one after another, in order.
				group := fmt.Sprintf("%d %d %q %q ", kg, ref, r.Key, r.Sub)
				if n := len(got) - 1; n >= 0 && strings.HasPrefix(got[n], group) {
					got[n] += fmt.Sprintf("%x", r.Value)
				} else {
					got = append(got, group+fmt.Sprintf("%x", r.Value))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.budget < 1<<20 && srt.Runs() == 0 {
				t.Fatal("the small budget wrote no sorted runs")
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%d lines, want %d", len(got), len(want))
			}
		})
	}
}
