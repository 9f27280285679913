package rocksdb

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/sstbuild"
	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
)

type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

var tableCount int

func build(t testing.TB, es []sstbuild.Entry, o sstbuild.Options) *sst.Table {
	t.Helper()
	if o.ColumnFamily == "" {
		o.ColumnFamily = "list-state"
	}
	if o.MergeOperator == "" {
		o.MergeOperator = StringAppendTESTOperator
	}
	slices.SortFunc(es, func(a, b sstbuild.Entry) int {
		if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
			return c
		}
		return cmpDesc(a.Seq, b.Seq)
	})
	b, err := sstbuild.Build(es, o)
	if err != nil {
		t.Fatal(err)
	}
	tableCount++
	tab, err := sst.Open(memFile{bytes.NewReader(b)}, fmt.Sprintf("%06d.sst", tableCount), sst.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func cmpDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func set(k string, seq uint64, v string) sstbuild.Entry {
	return sstbuild.Entry{UserKey: []byte(k), Seq: seq, Kind: sstbuild.Set, Value: []byte(v)}
}

func merge(k string, seq uint64, v string) sstbuild.Entry {
	return sstbuild.Entry{UserKey: []byte(k), Seq: seq, Kind: sstbuild.Merge, Value: []byte(v)}
}

func del(k string, seq uint64, kind uint8) sstbuild.Entry {
	return sstbuild.Entry{UserKey: []byte(k), Seq: seq, Kind: kind}
}

// scan collects key=value pairs from an iterator positioned by pos.
func scan(t *testing.T, cf *ColumnFamily, pos func(*Iter) bool) []string {
	t.Helper()
	it := cf.NewIter()
	defer it.Close()
	var out []string
	for ok := pos(it); ok; ok = it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func first(it *Iter) bool { return it.First() }

// TestListAcrossTables is Flink's ListState in RocksDB: a put of the list,
// then appends by merge, flushed into different tables. The value is every
// element, oldest first, joined with ','.
func TestListAcrossTables(t *testing.T) {
	t1 := build(t, []sstbuild.Entry{set("k1", 10, "a"), merge("k2", 11, "x")}, sstbuild.Options{})
	t2 := build(t, []sstbuild.Entry{merge("k1", 20, "b"), merge("k2", 21, "y")}, sstbuild.Options{Checksum: sstbuild.XXH3})
	t3 := build(t, []sstbuild.Entry{merge("k1", 30, "c"), merge("k1", 31, "d")}, sstbuild.Options{Snappy: true})
	cf, err := NewColumnFamily([]*sst.Table{t3, t1, t2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := scan(t, cf, first)
	want := []string{"k1=a,b,c,d", "k2=x,y"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q (newest wins would give %q)", got, want, []string{"k1=d", "k2=y"})
	}
	// A delimiter named by the OPTIONS file replaces ','.
	cf, err = NewColumnFamily([]*sst.Table{t1, t2, t3}, []byte("||"))
	if err != nil {
		t.Fatal(err)
	}
	if got := scan(t, cf, first); !slices.Equal(got, []string{"k1=a||b||c||d", "k2=x||y"}) {
		t.Fatalf("with delimiter ||: %q", got)
	}
}

// TestDeletions: the newest entry wins; DELETE and SINGLEDEL hide older
// values and cut merge chains; a range tombstone hides what is older than
// it in every table, not what is newer.
func TestDeletions(t *testing.T) {
	older := build(t, []sstbuild.Entry{
		set("a", 1, "a1"), set("b", 2, "b1"), set("c", 3, "c1"), set("d", 4, "d1"),
		set("e", 5, "e1"), set("f", 6, "f1"), set("g", 7, "g1"),
	}, sstbuild.Options{})
	newer := build(t, []sstbuild.Entry{
		set("a", 10, "a2"),            // overwrite
		del("b", 11, sstbuild.Delete), // delete
		del("c", 12, sstbuild.SingleDelete),
		merge("d", 13, "d2"),                                // append to a live base
		merge("e", 15, "e3"), del("e", 14, sstbuild.Delete), // merge after delete: no base
		merge("f", 17, "f2"), // the tombstone below (seq 16) cuts the base
		set("g", 30, "g2"),   // newer than the tombstone
	}, sstbuild.Options{Tombstones: []sstbuild.Tombstone{{Start: []byte("f"), End: []byte("h"), Seq: 16}}})
	cf, err := NewColumnFamily([]*sst.Table{older, newer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := scan(t, cf, first)
	want := []string{"a=a2", "d=d1,d2", "e=e3", "f=f2", "g=g2"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestPrefix iterates one key group at a time, as Flink's reader does, and
// never yields another group's keys.
func TestPrefix(t *testing.T) {
	var es []sstbuild.Entry
	for kg := 0; kg < 4; kg++ {
		for k := 0; k < 3; k++ {
			es = append(es, sstbuild.Entry{UserKey: []byte{byte(kg), byte(k)}, Seq: uint64(kg*10 + k + 1), Kind: sstbuild.Set, Value: []byte{byte(kg)}})
		}
	}
	// Key group 2 deleted by a range tombstone, as Flink clips a restored
	// instance to its key-group range.
	tab := build(t, es, sstbuild.Options{BlockSize: 8, Tombstones: []sstbuild.Tombstone{{Start: []byte{2}, End: []byte{3}, Seq: 100}}})
	cf, err := NewColumnFamily([]*sst.Table{tab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	it := cf.NewIter()
	defer it.Close()
	for kg := 0; kg < 5; kg++ {
		p, err := KeyGroupPrefix(kg, 8)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ok := it.SeekPrefix(p); ok; ok = it.Next() {
			if it.Key()[0] != byte(kg) || it.Value()[0] != byte(kg) {
				t.Fatalf("key group %d: key %x value %x", kg, it.Key(), it.Value())
			}
			n++
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
		want := 3
		if kg >= 2 {
			want = 0
			if kg == 3 {
				want = 3
			}
		}
		if n != want {
			t.Fatalf("key group %d: %d keys, want %d", kg, n, want)
		}
	}
}

// TestMergeModel compares the iterator with a direct computation over
// random tables: many versions per key spread over several tables,
// deletions of both kinds, merge operands and overlapping range tombstones.
func TestMergeModel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 200; round++ {
		nt := 1 + r.IntN(4)
		seqs := r.Perm(400)
		var all []sstbuild.Entry
		var tombs []sstbuild.Tombstone
		var tables []*sst.Table
		for ti := 0; ti < nt; ti++ {
			var es []sstbuild.Entry
			used := map[string]bool{}
			for j := 0; j < r.IntN(60); j++ {
				k := fmt.Sprintf("%c%02d", 'a'+r.IntN(2), r.IntN(25))
				e := sstbuild.Entry{UserKey: []byte(k), Seq: uint64(seqs[0] + 1), Kind: []uint8{sstbuild.Set, sstbuild.Merge, sstbuild.Merge, sstbuild.Delete, sstbuild.SingleDelete}[r.IntN(5)]}
				seqs = seqs[1:]
				if e.Kind == sstbuild.Set || e.Kind == sstbuild.Merge {
					e.Value = []byte(fmt.Sprintf("v%d", e.Seq))
				}
				used[k] = true
				es = append(es, e)
			}
			var ts []sstbuild.Tombstone
			for j := 0; j < r.IntN(3); j++ {
				s := fmt.Sprintf("%c%02d", 'a'+r.IntN(2), r.IntN(25))
				e := fmt.Sprintf("%c%02d", 'a'+r.IntN(2), r.IntN(26))
				ts = append(ts, sstbuild.Tombstone{Start: []byte(s), End: []byte(e), Seq: uint64(seqs[0] + 1)})
				seqs = seqs[1:]
			}
			all, tombs = append(all, es...), append(tombs, ts...)
			tables = append(tables, build(t, es, sstbuild.Options{BlockSize: 1 + r.IntN(200), RestartInterval: 1 + r.IntN(8), Tombstones: ts}))
		}
		cf, err := NewColumnFamily(tables, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := model(all, tombs, nil, nil)
		if got := scan(t, cf, first); !slices.Equal(got, want) {
			t.Fatalf("round %d: got\n%q\nwant\n%q", round, got, want)
		}
		lo := fmt.Sprintf("a%02d", r.IntN(25))
		hi := fmt.Sprintf("b%02d", r.IntN(25))
		if got, want := scan(t, cf, func(it *Iter) bool { return it.SeekGE([]byte(lo), []byte(hi)) }), model(all, tombs, []byte(lo), []byte(hi)); !slices.Equal(got, want) {
			t.Fatalf("round %d, [%s, %s): got\n%q\nwant\n%q", round, lo, hi, got, want)
		}
		if got, want := scan(t, cf, func(it *Iter) bool { return it.SeekPrefix([]byte("b")) }), model(all, tombs, []byte("b"), []byte("c")); !slices.Equal(got, want) {
			t.Fatalf("round %d, prefix b: got\n%q\nwant\n%q", round, got, want)
		}
	}
}

// model resolves every user key in [lo, hi) from all versions at once.
func model(all []sstbuild.Entry, tombs []sstbuild.Tombstone, lo, hi []byte) []string {
	byKey := map[string][]sstbuild.Entry{}
	for _, e := range all {
		byKey[string(e.UserKey)] = append(byKey[string(e.UserKey)], e)
	}
	var keys []string
	for k := range byKey {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		vs := byKey[k]
		slices.SortFunc(vs, func(a, b sstbuild.Entry) int { return cmpDesc(a.Seq, b.Seq) })
		var cover uint64
		for _, t := range tombs {
			if string(t.Start) <= k && k < string(t.End) && t.Seq > cover {
				cover = t.Seq
			}
		}
		var ops []string
		base, hasBase := "", false
	walk:
		for _, v := range vs {
			if v.Seq < cover {
				break
			}
			switch v.Kind {
			case sstbuild.Set:
				base, hasBase = string(v.Value), true
				break walk
			case sstbuild.Merge:
				ops = append([]string{string(v.Value)}, ops...)
			default:
				break walk
			}
		}
		switch {
		case hasBase && len(ops) > 0:
			out = append(out, k+"="+base+","+strings.Join(ops, ","))
		case hasBase:
			out = append(out, k+"="+base)
		case len(ops) > 0:
			out = append(out, k+"="+strings.Join(ops, ","))
		}
	}
	return out
}

// TestRefusals: tables that cannot be merged correctly are refused with a
// located error.
func TestRefusals(t *testing.T) {
	a := build(t, []sstbuild.Entry{set("k", 5, "a")}, sstbuild.Options{})
	cases := []struct {
		name   string
		tables func() []*sst.Table
		want   error
		msg    string
	}{
		{"two column families", func() []*sst.Table {
			return []*sst.Table{a, build(t, []sstbuild.Entry{set("k", 6, "b")}, sstbuild.Options{ColumnFamily: "other", ColumnFamilyID: 2})}
		}, sst.ErrCorrupt, `column family "other"`},
		{"same sequence number twice", func() []*sst.Table {
			return []*sst.Table{a, build(t, []sstbuild.Entry{merge("k", 5, "b")}, sstbuild.Options{})}
		}, sst.ErrCorrupt, "sequence number 5"},
		{"other merge operator", func() []*sst.Table {
			return []*sst.Table{
				build(t, []sstbuild.Entry{merge("k", 6, "b")}, sstbuild.Options{MergeOperator: "UInt64AddOperator"}),
			}
		}, sst.ErrUnsupported, "UInt64AddOperator"},
		{"ingested table among others", func() []*sst.Table {
			return []*sst.Table{a, build(t, []sstbuild.Entry{set("j", 0, "b")}, sstbuild.Options{
				Properties: map[string][]byte{"rocksdb.external_sst_file.version": {2}},
			})}
		}, sst.ErrUnsupported, "ingested"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cf, err := NewColumnFamily(c.tables(), nil)
			if err == nil {
				it := cf.NewIter()
				for ok := it.First(); ok; ok = it.Next() {
				}
				err = it.Err()
				it.Close()
			}
			var e *sst.Error
			if !errors.Is(err, c.want) || !errors.As(err, &e) || !strings.HasSuffix(e.File, ".sst") || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %v naming a table and %q", err, c.want, c.msg)
			}
		})
	}
}

// A key's merge operands are bounded when joined: each sits in a block of
// its own size, but a hostile table may hold any number of them.
func TestMaxValueSize(t *testing.T) {
	var es []sstbuild.Entry
	for i := 0; i < 100; i++ {
		es = append(es, merge("k", uint64(i+1), "0123456789"))
	}
	cf, err := NewColumnFamily([]*sst.Table{build(t, es, sstbuild.Options{})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		max int
		ok  bool
	}{{0, true}, {100*10 + 99, true}, {100*10 + 98, false}} {
		cf.MaxValueSize = c.max
		it := cf.NewIter()
		ok := it.First()
		if ok != c.ok || c.ok && len(it.Value()) != 1099 || !c.ok && !errors.Is(it.Err(), sst.ErrUnsupported) {
			t.Errorf("bound %d: %v, %d bytes, %v", c.max, ok, len(it.Value()), it.Err())
		}
		it.Close()
	}
}

// TestFragments checks the tombstone sweep against a direct maximum over
// every tombstone, at every boundary and between.
func TestFragments(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for round := 0; round < 300; round++ {
		var ts []sst.Tombstone
		for i := 0; i < r.IntN(12); i++ {
			ts = append(ts, sst.Tombstone{Start: []byte{byte(r.IntN(30))}, End: []byte{byte(r.IntN(30))}, Seq: uint64(1 + r.IntN(50))})
		}
		c := tombCursor{frags: fragmentTombstones(ts)}
		for k := 0; k < 31; k++ {
			key := []byte{byte(k)}
			var want uint64
			for _, t := range ts {
				if bytes.Compare(t.Start, key) <= 0 && bytes.Compare(key, t.End) < 0 {
					want = max(want, t.Seq)
				}
			}
			if got := c.coverSeq(key); got != want {
				t.Fatalf("round %d, key %d: cover %d, want %d (tombstones %v, fragments %v)", round, k, got, want, ts, c.frags)
			}
		}
	}
}

func TestKeyGroupPrefix(t *testing.T) {
	for _, c := range []struct {
		kg, maxP int
		want     []byte
	}{{0, 1, []byte{0}}, {3, 4, []byte{3}}, {127, 128, []byte{127}}, {128, 129, []byte{0, 128}}, {631, 720, []byte{2, 0x77}}, {32767, 32768, []byte{0x7f, 0xff}}} {
		p, err := KeyGroupPrefix(c.kg, c.maxP)
		if err != nil || !bytes.Equal(p, c.want) {
			t.Errorf("KeyGroupPrefix(%d, %d) = %x, %v; want %x", c.kg, c.maxP, p, err, c.want)
		}
		if kg, err := KeyGroupOf(append(p, 9, 9), c.maxP); kg != c.kg || err != nil {
			t.Errorf("KeyGroupOf(%x, %d) = %d, %v", p, c.maxP, kg, err)
		}
	}
	for _, c := range [][2]int{{4, 4}, {-1, 4}, {0, 0}, {0, 1 << 16}} {
		if _, err := KeyGroupPrefix(c[0], c[1]); err == nil {
			t.Errorf("KeyGroupPrefix(%d, %d) accepted", c[0], c[1])
		}
	}
	if _, err := KeyGroupOf([]byte{5}, 200); !errors.Is(err, sst.ErrCorrupt) {
		t.Errorf("one-byte key at max parallelism 200: %v", err)
	}
	if _, err := KeyGroupOf([]byte{5, 1}, 4); !errors.Is(err, sst.ErrCorrupt) {
		t.Errorf("key group 5 at max parallelism 4: %v", err)
	}
}

// TestBoundedMemory checks that merging allocates the same whatever the
// tables' size: a block per table is reused, nothing accumulates.
func TestBoundedMemory(t *testing.T) {
	alloc := func(n int) uint64 {
		var ts []*sst.Table
		for part := 0; part < 4; part++ {
			var es []sstbuild.Entry
			for i := part; i < n; i += 4 {
				es = append(es, set(fmt.Sprintf("k%08d", i), uint64(i+1), "value-of-some-length"))
			}
			ts = append(ts, build(t, es, sstbuild.Options{Snappy: true}))
		}
		cf, err := NewColumnFamily(ts, nil)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		it := cf.NewIter()
		m := 0
		for ok := it.First(); ok; ok = it.Next() {
			m++
		}
		it.Close()
		runtime.ReadMemStats(&after)
		if m != n || it.Err() != nil {
			t.Fatalf("%d keys of %d: %v", m, n, it.Err())
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(4_000), alloc(100_000)
	t.Logf("allocated %d bytes merging 4,000 keys, %d merging 100,000", small, large)
	if large > 2*small+64<<10 {
		t.Errorf("allocation grows with the tables: %d bytes for 4,000 keys, %d for 100,000", small, large)
	}
}

// FuzzMerge decodes bytes into entries and range tombstones spread over
// up to three tables and compares the merging iterator with the model.
// Every four bytes are one write: table, user key, what (set, merge,
// delete, single delete, range deletion up to the fourth byte), value.
func FuzzMerge(f *testing.F) {
	f.Add([]byte{0, 'a', 0, 'x', 1, 'a', 1, 'y', 2, 'a', 1, 'z', 1, 'b', 2, 0, 0, 'b', 1, 'w', 2, 'a', 4, 'c'})
	f.Add([]byte{0, 'k', 1, '1', 1, 'k', 1, '2', 0, 'k', 3, 0, 2, 'k', 1, '3'})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4*200 {
			return
		}
		var es [3][]sstbuild.Entry
		var ts [3][]sstbuild.Tombstone
		var all []sstbuild.Entry
		var tombs []sstbuild.Tombstone
		for i := 0; i+4 <= len(b); i += 4 {
			ti, key, what, val := int(b[i]%3), []byte{b[i+1] % 16}, b[i+2]%5, b[i+3]
			seq := uint64(i/4 + 1)
			if what == 4 {
				tb := sstbuild.Tombstone{Start: key, End: []byte{val % 17}, Seq: seq}
				ts[ti], tombs = append(ts[ti], tb), append(tombs, tb)
				continue
			}
			e := sstbuild.Entry{UserKey: key, Seq: seq, Kind: []uint8{sstbuild.Set, sstbuild.Merge, sstbuild.Delete, sstbuild.SingleDelete}[what]}
			if e.Kind == sstbuild.Set || e.Kind == sstbuild.Merge {
				e.Value = []byte{'a' + val%26}
			}
			es[ti], all = append(es[ti], e), append(all, e)
		}
		var tables []*sst.Table
		for i := range es {
			if len(es[i]) > 0 || len(ts[i]) > 0 {
				tables = append(tables, build(t, es[i], sstbuild.Options{BlockSize: 16, RestartInterval: 2, Tombstones: ts[i]}))
			}
		}
		if len(tables) == 0 {
			return
		}
		cf, err := NewColumnFamily(tables, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := scan(t, cf, first), model(all, tombs, nil, nil); !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		lo := []byte{b[0] % 16}
		if got, want := scan(t, cf, func(it *Iter) bool { return it.SeekPrefix(lo) }), model(all, tombs, lo, prefixEnd(lo)); !slices.Equal(got, want) {
			t.Fatalf("prefix %x: got %q, want %q", lo, got, want)
		}
	})
}
