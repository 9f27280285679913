package flinkfmt

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/sstbuild"
	"github.com/stateproc/stateproc/keygroup"
)

// NativePairs gives a native handle's pairs as the canonical layout holds
// them: the key-group prefix cut, list elements joined by the merge from
// three tables oldest first, map values behind their null flag, timers'
// empty values, the newest version of a key over all tables and none of
// the deleted ones, the key groups outside the handle's range and the
// default column family not read; per key group the header's states in
// order, each state's keys in byte order.
func TestNativePairs(t *testing.T) {
	sc := newScenario(t)
	dir := writeNative(t, t.TempDir(), ".", 128, keygroup.Range{Start: 0, End: 63}, nativeHeader(), nil, sc.files)
	_, k := openKeyed(t, dir)
	np, err := k.OpenNative(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer np.Close()
	kg := func(name string) int { return kgOf(sc.keys[name], 128) }
	key := func(name string, user ...string) []byte { return nkey(kg(name), sc.keys[name], user...)[1:] }
	type pair struct {
		kg, state  int
		key, value []byte
	}
	want := []pair{
		{kg("alice"), 0, key("alice"), long(7)},
		{kg("alice"), 1, key("alice"), long(1, 2, 3, 4)},
		{kg("alice"), 3, timerKey(kg("alice"), 1000, sc.keys["alice"])[1:], nil},
		{kg("dave"), 0, key("dave"), long(4)},
		{kg("erin"), 1, key("erin"), long(8)},
		{kg("erin"), 2, key("erin", "color"), bld(nil).u8(0).i64(5)},
		{kg("erin"), 2, key("erin", "size"), bld(nil).u8(1)},
	}
	slices.SortStableFunc(want, func(a, b pair) int {
		if a.kg != b.kg {
			return a.kg - b.kg
		}
		if a.state != b.state {
			return a.state - b.state
		}
		return bytes.Compare(a.key, b.key)
	})
	var got []pair
	for g := 0; g <= 63; g++ {
		err := np.KeyGroup(g, func(state int, key, value []byte) error {
			got = append(got, pair{g, state, bytes.Clone(key), bytes.Clone(value)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	show := func(ps []pair) string {
		var b strings.Builder
		for _, p := range ps {
			fmt.Fprintf(&b, "%d %s %x = %x\n", p.kg, k.States[p.state].Name, p.key, p.value)
		}
		return b.String()
	}
	if show(got) != show(want) {
		t.Errorf("pairs:\n%swant:\n%s", show(got), show(want))
	}
	if err := np.KeyGroup(100, func(int, []byte, []byte) error { return nil }); err == nil {
		t.Error("key group 100, outside the handle's range, was read")
	}
	if _, err := k.OpenNative(context.Background(), 1); err == nil {
		t.Error("a part that is not there opened")
	}
}

// BenchmarkNativeToCanonical measures what convert does with a native
// handle: 200,000 values in two tables and 50,000 lists whose elements lie
// in two more, merged, copied and written as a canonical stream under the
// handle's header.
func BenchmarkNativeToCanonical(b *testing.B) {
	const keys, lists = 200_000, 50_000
	var visits, items [2][]sstbuild.Entry
	for i := 0; i < keys; i++ {
		key := nkey(i*128/keys, fmt.Sprintf("user-%07d", i))
		visits[i%2] = append(visits[i%2], set(key, uint64(i+1), long(int64(i))))
		if i < lists {
			items[0] = append(items[0], set(key, uint64(keys+i+1), long(1, 2)))
			items[1] = append(items[1], merge(key, uint64(keys+lists+i+1), long(3)))
		}
	}
	var files []nativeFile
	for i := range 2 {
		files = append(files, relFile(fmt.Sprintf("%06d.sst", i+1), fmt.Sprintf("v%d", i), nativeTable(b, "visits", visits[i], sstbuild.Options{ColumnFamilyID: 1})))
		files = append(files, relFile(fmt.Sprintf("%06d.sst", i+3), fmt.Sprintf("i%d", i), nativeTable(b, "items", items[i], sstbuild.Options{ColumnFamilyID: 2})))
	}
	dir := writeNative(b, b.TempDir(), ".", 128, keygroup.All(128), nativeHeader(), nil, files)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_, k := openKeyed(b, dir)
		h, err := k.CanonicalHeader([]int{0})
		if err != nil {
			b.Fatal(err)
		}
		cw, err := NewCanonicalWriter(io.Discard, h, 128, keygroup.All(128))
		if err != nil {
			b.Fatal(err)
		}
		np, err := k.OpenNative(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for kg := range 128 {
			err := np.KeyGroup(kg, func(state int, key, value []byte) error {
				n++
				return cw.Add(kg, h.IDs[state], key, value)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		np.Close()
		if _, err := cw.Finish(); err != nil || n != keys+lists {
			b.Fatalf("%d pairs, %v", n, err)
		}
	}
	b.ReportMetric(float64(keys+lists)*float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}
