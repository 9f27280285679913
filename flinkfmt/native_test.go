package flinkfmt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/sstbuild"
	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

const (
	listSnapshotClass  = "org.apache.flink.api.common.typeutils.base.ListSerializerSnapshot"
	mapSnapshotClass   = "org.apache.flink.api.common.typeutils.base.MapSerializerSnapshot"
	timerSnapshotClass = "org.apache.flink.streaming.api.operators.TimerSerializerSnapshot"
	appendOperator     = "StringAppendTESTOperator"
)

// composite is a CompositeTypeSerializerSnapshot of the nested snapshots.
func composite(class string, nested ...bld) bld {
	b := bld(nil).utf(class).i32(3).i32(911108).i32(1).i32(1333245).i32(1).i32(len(nested))
	for _, n := range nested {
		b = b.raw(n...)
	}
	return b
}

func simpleSnapshot(class string) bld { return bld(nil).versioned(class) }

// kvState is the meta info of a keyed state in the void namespace.
func kvState(name, kind string, value bld) bld {
	return bld(nil).utf(name).i32(int(KeyValue)).
		i32(1).utf("KEYED_STATE_TYPE").utf(kind).
		i32(2).utf(namespaceSerializerKey).i32(2).versioned(voidSnapshotClass).
		utf(valueSerializerKey).i32(2).raw(value...)
}

// nativeHeader is the keyed-state header of the native handles of these
// tests: String keys; "visits", a ValueState<Long>; "items", a
// ListState<Long>; "attrs", a MapState<String, Long>; the event-time timer
// service "t".
func nativeHeader() bld {
	long, str := simpleSnapshot(longSnapshotClass), simpleSnapshot(stringSnapshotClass)
	states := []bld{
		kvState("visits", "VALUE", long),
		kvState("items", "LIST", composite(listSnapshotClass, long)),
		kvState("attrs", "MAP", composite(mapSnapshotClass, str, long)),
		bld(nil).utf("_timer_state/event_t").i32(int(PriorityQueue)).i32(0).
			i32(1).utf(valueSerializerKey).i32(2).raw(composite(timerSnapshotClass, str, simpleSnapshot(voidSnapshotClass))...),
	}
	b := bld(nil).i32(6).u8(0).i32(2).versioned(stringSnapshotClass).u16(len(states))
	for _, s := range states {
		b = b.raw(s...)
	}
	return b
}

// nkey is a RocksDB key of the canonical composite layout at max
// parallelism 128: the key group, the String key, the void namespace and
// any map user key.
func nkey(kg int, key string, user ...string) []byte {
	b := bld(nil).u8(byte(kg)).str(key).u8(0)
	for _, u := range user {
		b = b.str(u)
	}
	return b
}

func timerKey(kg int, ts int64, key string) []byte {
	return bld(nil).u8(byte(kg)).i64(ts ^ math.MinInt64).str(key).u8(0)
}

func long(vs ...int64) []byte {
	var b bld
	for i, v := range vs {
		if i > 0 {
			b = b.u8(',')
		}
		b = b.i64(v)
	}
	return b
}

// nativeTable builds a table of column family cf from entries in any
// order.
func nativeTable(t testing.TB, cf string, es []sstbuild.Entry, o sstbuild.Options) []byte {
	t.Helper()
	es = slices.Clone(es)
	slices.SortFunc(es, func(a, b sstbuild.Entry) int {
		if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
			return c
		}
		return -cmpU(a.Seq, b.Seq)
	})
	o.ColumnFamily = cf
	if o.MergeOperator == "" {
		o.MergeOperator = appendOperator
	}
	o.Snappy, o.UserKeyIndex, o.DeltaIndex = true, true, true
	b, err := sstbuild.Build(es, o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func set(key []byte, seq uint64, v []byte) sstbuild.Entry {
	return sstbuild.Entry{UserKey: key, Seq: seq, Kind: sstbuild.Set, Value: v}
}

func merge(key []byte, seq uint64, v []byte) sstbuild.Entry {
	return sstbuild.Entry{UserKey: key, Seq: seq, Kind: sstbuild.Merge, Value: v}
}

const testOptions = "[Version]\n  rocksdb_version=6.20.3\n[CFOptions \"default\"]\n  merge_operator=StringAppendTESTOperator\n"

// nativeFile is one file of a native handle: its name in the RocksDB
// directory, its bytes, where the test writes it (relative to the test's
// directory) and the stream handle the metadata records for it.
type nativeFile struct {
	local string
	data  []byte
	at    string
	ref   bld
}

// relFile is a file beside the _metadata, as native savepoints keep them.
func relFile(local, name string, data []byte) nativeFile {
	return nativeFile{local: local, data: data, at: name, ref: bld(nil).u8(byte(StreamRelativeFile)).utf(name).i64(int64(len(data)))}
}

// inlineDBFile is a file of the RocksDB directory that the metadata holds,
// as Flink inlines small files.
func inlineDBFile(local string, data []byte) nativeFile {
	return nativeFile{local: local, data: data, ref: bld(nil).u8(byte(StreamInline)).utf("inline-" + local).i32(len(data)).raw(data...)}
}

// withDBFiles adds a CURRENT and the MANIFEST it names, inline, to files
// that lack them: RocksDB opens a database by them.
func withDBFiles(shared, private []nativeFile) []nativeFile {
	for _, f := range slices.Concat(shared, private) {
		if f.local == "CURRENT" {
			return private
		}
	}
	return append(slices.Clone(private), inlineDBFile("CURRENT", []byte("MANIFEST-000001\n")), inlineDBFile("MANIFEST-000001", []byte("manifest")))
}

// nativeHandle writes an INCREMENTAL_KEY_GROUPS_HANDLE_V2 of key groups
// kgs with an inline metadata stream; shared files first. A CURRENT and
// MANIFEST are added, inline, unless given.
func nativeHandle(kgs keygroup.Range, header bld, shared, private []nativeFile) bld {
	private = withDBFiles(shared, private)
	b := bld(nil).u8(byte(KeyedIncrementalV2)).i64(3).utf("backend-1").i32(kgs.Start).i32(kgs.Len()).i64(0).
		u8(byte(StreamInline)).utf("meta").i32(len(header)).raw(header...)
	for _, list := range [][]nativeFile{shared, private} {
		b = b.i32(len(list))
		for _, f := range list {
			b = b.utf(f.local).raw(f.ref...)
		}
	}
	return b.utf("handle-1")
}

// keyedMetadata writes a version 3 _metadata of one operator whose
// subtasks have the given managed keyed handles.
func keyedMetadata(maxP int, handles ...bld) bld {
	b := bld(nil).i32(Magic).i32(3).i64(3).i32(0).i32(1).raw(make([]byte, 16)...).i32(len(handles)).i32(maxP).u8(0).i32(len(handles))
	for i, h := range handles {
		b = b.i32(i).i32(0).i32(0).raw(h...).u8(0).i32(0).i32(0)
	}
	return b
}

// writeNative writes the files and a _metadata of one subtask with the
// handle into dir (at the files' places) and returns the metadata's
// directory.
func writeNative(t testing.TB, dir, metaDir string, maxP int, kgs keygroup.Range, header bld, shared, private []nativeFile) string {
	t.Helper()
	for _, f := range append(slices.Clone(shared), private...) {
		if f.at == "" {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.at))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md := filepath.Join(dir, filepath.FromSlash(metaDir))
	if err := os.MkdirAll(md, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := keyedMetadata(maxP, nativeHandle(kgs, header, shared, private))
	if err := os.WriteFile(filepath.Join(md, MetadataFile), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	return md
}

// kgOf is Flink's key group of a String key.
func kgOf(key string, maxP int) int {
	k := &Keyed{Operator: &Operator{MaxParallelism: maxP}}
	kg, _ := k.KeyGroupOf(key)
	return kg
}

// pickKeys returns names whose key groups at max parallelism 128 satisfy
// ok, each in a key group of its own.
func pickKeys(t *testing.T, n int, ok func(kg int) bool) []string {
	var out []string
	used := map[int]bool{}
	for i := 0; len(out) < n && i < 10000; i++ {
		name := fmt.Sprintf("user-%d", i)
		if kg := kgOf(name, 128); ok(kg) && !used[kg] {
			used[kg] = true
			out = append(out, name)
		}
	}
	if len(out) < n {
		t.Fatalf("found %d keys", len(out))
	}
	return out
}

// scenario is a native handle of key groups 0 to 63 at max parallelism
// 128 spread over several tables per column family, as flushes and
// compactions leave them: overwrites, a deletion and a range deletion,
// list elements in three tables, a map entry with a null value, a timer,
// a key of key group 100 that the handle's range excludes and a table of
// the default column family. want is what must be read, in order.
type scenario struct {
	files []nativeFile
	want  []string
	keys  map[string]string
}

func newScenario(t *testing.T) scenario {
	in := pickKeys(t, 5, func(kg int) bool { return kg < 64 })
	out := pickKeys(t, 1, func(kg int) bool { return kg >= 64 })
	alice, bob, carol, dave, erin, zed := in[0], in[1], in[2], in[3], in[4], out[0]
	kg := func(k string) int { return kgOf(k, 128) }
	key := func(k string, user ...string) []byte { return nkey(kg(k), k, user...) }
	tombStart := key(carol)
	tombEnd := append(bytes.Clone(tombStart), 0)
	tables := []struct {
		cf string
		es []sstbuild.Entry
		o  sstbuild.Options
	}{
		{"visits", []sstbuild.Entry{set(key(alice), 5, long(1)), set(key(bob), 6, long(2)), set(key(carol), 7, long(3)), set(nkey(kg(zed), zed), 8, long(9))}, sstbuild.Options{ColumnFamilyID: 1}},
		{"visits", []sstbuild.Entry{{UserKey: key(bob), Seq: 20, Kind: sstbuild.Delete}}, sstbuild.Options{ColumnFamilyID: 1, Tombstones: []sstbuild.Tombstone{{Start: tombStart, End: tombEnd, Seq: 21}}}},
		{"visits", []sstbuild.Entry{set(key(alice), 30, long(7)), set(key(carol), 15, long(5)), set(key(dave), 31, long(4))}, sstbuild.Options{ColumnFamilyID: 1, Checksum: sstbuild.XXH3}},
		{"items", []sstbuild.Entry{set(key(alice), 3, long(1))}, sstbuild.Options{ColumnFamilyID: 2}},
		{"items", []sstbuild.Entry{merge(key(alice), 9, long(2, 3))}, sstbuild.Options{ColumnFamilyID: 2}},
		{"items", []sstbuild.Entry{merge(key(alice), 12, long(4)), merge(key(erin), 13, long(8))}, sstbuild.Options{ColumnFamilyID: 2}},
		{"attrs", []sstbuild.Entry{set(key(erin, "color"), 14, bld(nil).u8(0).i64(5)), set(key(erin, "size"), 16, bld(nil).u8(1))}, sstbuild.Options{ColumnFamilyID: 3}},
		{"_timer_state/event_t", []sstbuild.Entry{set(timerKey(kg(alice), 1000, alice), 17, nil), set(timerKey(kg(zed), 5, zed), 18, nil)}, sstbuild.Options{ColumnFamilyID: 4}},
		{"default", []sstbuild.Entry{set([]byte("junk"), 19, []byte("x"))}, sstbuild.Options{}},
	}
	var sc scenario
	sc.keys = map[string]string{"alice": alice, "bob": bob, "carol": carol, "dave": dave, "erin": erin, "zed": zed}
	for i, tab := range tables {
		local := fmt.Sprintf("%06d.sst", 10+i)
		sc.files = append(sc.files, relFile(local, fmt.Sprintf("table-%d", i), nativeTable(t, tab.cf, tab.es, tab.o)))
	}
	sc.files = append(sc.files,
		relFile("OPTIONS-000007", "options-7", []byte("[Version]\n  rocksdb_version=5.0\n")),
		relFile("OPTIONS-000009", "options-9", []byte(testOptions)),
		relFile("MANIFEST-000004", "manifest", []byte("not read")),
		relFile("CURRENT", "current", []byte("MANIFEST-000004\n")),
	)
	type row struct {
		kg, state int
		key       []byte
		text      string
	}
	rows := []row{
		{kg(alice), 0, key(alice), fmt.Sprintf("visits %s = 7", alice)},
		{kg(dave), 0, key(dave), fmt.Sprintf("visits %s = 4", dave)},
		{kg(erin), 2, key(erin, "color"), fmt.Sprintf("attrs %s [color] = 5", erin)},
		{kg(erin), 2, key(erin, "size"), fmt.Sprintf("attrs %s [size] = null", erin)},
		{kg(alice), 3, timerKey(kg(alice), 1000, alice), fmt.Sprintf("_timer_state/event_t %s @1000", alice)},
		{kg(erin), 1, key(erin), fmt.Sprintf("items %s = 8", erin)},
	}
	for _, v := range []int{1, 2, 3, 4} {
		rows = append(rows, row{kg(alice), 1, key(alice), fmt.Sprintf("items %s = %d", alice, v)})
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		if a.kg != b.kg {
			return a.kg - b.kg
		}
		if a.state != b.state {
			return a.state - b.state
		}
		return bytes.Compare(a.key, b.key)
	})
	for _, r := range rows {
		sc.want = append(sc.want, fmt.Sprintf("%d %s", r.kg, r.text))
	}
	return sc
}

// describe reads every entry of a keyed state as text.
func describe(t *testing.T, k *Keyed, it *EntryIterator) []string {
	t.Helper()
	var got []string
	for it.Next() {
		e := it.Entry()
		m := k.States[e.State]
		key := mustDecode(t, k.Key, e.Key)
		var s string
		switch {
		case m.Kind == Timers:
			s = fmt.Sprintf("%s %v @%d", m.Name, key, e.Timestamp)
		case m.Kind == Map && e.Null:
			s = fmt.Sprintf("%s %v [%v] = null", m.Name, key, mustDecode(t, m.MapKey, e.MapKey))
		case m.Kind == Map:
			s = fmt.Sprintf("%s %v [%v] = %v", m.Name, key, mustDecode(t, m.MapKey, e.MapKey), mustDecode(t, m.Stored, e.Value))
		default:
			s = fmt.Sprintf("%s %v = %v", m.Name, key, mustDecode(t, m.Stored, e.Value))
		}
		got = append(got, fmt.Sprintf("%d %s", e.KeyGroup, s))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func openKeyed(t testing.TB, dir string) (*Reader, *Keyed) {
	t.Helper()
	ctx := context.Background()
	r, err := Open(ctx, storage.LocalDir(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := r.Keyed(ctx, r.Metadata().Operators[0])
	if err != nil {
		t.Fatal(err)
	}
	return r, k
}

// A native handle built from RocksDB's layout: the newest entry of a key
// wins over all tables, deletions and range deletions hide older entries,
// list elements are joined from three tables oldest first, entries of key
// groups outside the handle's range and RocksDB's default column family
// are not read, and every state's entries come per key group in header
// order.
func TestNativeHandle(t *testing.T) {
	sc := newScenario(t)
	dir := writeNative(t, t.TempDir(), ".", 128, keygroup.Range{Start: 0, End: 63}, nativeHeader(), nil, sc.files)
	_, k := openKeyed(t, dir)
	if k.Layouts[LayoutRocksDBNative] != 1 || len(k.States) != 4 || len(k.Notes) != 0 {
		t.Fatalf("layouts %v, %d states, notes %q", k.Layouts, len(k.States), k.Notes)
	}
	ctx := context.Background()
	it := k.Entries(ctx, -1, keygroup.All(128))
	got := describe(t, k, it)
	if !slices.Equal(got, sc.want) {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sc.want, "\n"))
	}
	// One state, and a key-group range that ends before erin's.
	items := k.State("items")
	erinKG := kgOf(sc.keys["erin"], 128)
	got = describe(t, k, k.Entries(ctx, items, keygroup.Range{Start: 0, End: erinKG - 1}))
	var want []string
	for _, w := range sc.want {
		var kg int
		fmt.Sscan(w, &kg)
		if strings.Contains(w, " items ") && kg < erinKG {
			want = append(want, w)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("items before key group %d: %q, want %q", erinKG, got, want)
	}
	// A lookup goes to the key's key group.
	got = describe(t, k, k.Lookup(ctx, items, sc.keys["alice"]))
	if len(got) != 4 || !strings.HasSuffix(got[3], "= 4") {
		t.Errorf("lookup of alice's items: %q", got)
	}
	if got := describe(t, k, k.Lookup(ctx, k.State("visits"), sc.keys["bob"])); len(got) != 0 {
		t.Errorf("bob's deleted visits: %q", got)
	}
	if got := describe(t, k, k.Lookup(ctx, k.State("visits"), sc.keys["zed"])); len(got) != 0 {
		t.Errorf("zed's visits, outside the handle's key groups: %q", got)
	}
}

// A key group larger than one chunk is streamed: the iterator resumes in
// the middle of a state's column family and reads every entry once, in
// order, and the tables are closed at the end.
func TestNativeHandleStreams(t *testing.T) {
	const keys, elems = 3 * nativeChunkEntries, 2 * nativeChunkEntries
	var visits, visits2 []sstbuild.Entry
	for i := 0; i < keys; i++ {
		e := set(nkey(3, fmt.Sprintf("k%06d", i)), uint64(i+1), long(int64(i)))
		if i%3 == 0 {
			visits2 = append(visits2, e)
		} else {
			visits = append(visits, e)
		}
	}
	list := make([]int64, elems)
	for i := range list {
		list[i] = int64(i)
	}
	files := []nativeFile{
		relFile("000001.sst", "a", nativeTable(t, "visits", visits, sstbuild.Options{ColumnFamilyID: 1, BlockSize: 512})),
		relFile("000002.sst", "b", nativeTable(t, "visits", visits2, sstbuild.Options{ColumnFamilyID: 1, BlockSize: 512})),
		relFile("000003.sst", "c", nativeTable(t, "items", []sstbuild.Entry{set(nkey(3, "list"), uint64(keys+1), long(list...))}, sstbuild.Options{ColumnFamilyID: 2})),
	}
	dir := writeNative(t, t.TempDir(), ".", 128, keygroup.Range{Start: 0, End: 127}, nativeHeader(), nil, files)
	_, k := openKeyed(t, dir)
	it := k.Entries(context.Background(), -1, keygroup.All(128))
	n, chunks := 0, 0
	var last []byte
	for it.Next() {
		e := it.Entry()
		if it.pos == 0 {
			chunks++
		}
		if k.States[e.State].Name == "visits" {
			if want := fmt.Sprintf("k%06d", n); mustDecode(t, k.Key, e.Key) != want || mustDecode(t, k.States[0].Stored, e.Value) != int64(n) {
				t.Fatalf("entry %d: %x = %x", n, e.Key, e.Value)
			}
			if last != nil && bytes.Compare(last, e.Key) >= 0 {
				t.Fatalf("key %x after %x", e.Key, last)
			}
			last = bytes.Clone(e.Key)
		} else if v := mustDecode(t, k.States[1].Stored, e.Value); v != int64(n-keys) {
			t.Fatalf("list element %d is %v", n-keys, v)
		}
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if n != keys+elems || chunks < 4 {
		t.Errorf("%d entries in %d chunks, want %d in at least 4", n, chunks, keys+elems)
	}
	if it.native.inst != nil {
		t.Error("the tables are still open after the last entry")
	}
}

// Damage in a native handle is reported where it is: the table, key group
// and block, matching this package's, snapshotfmt's and package sst's
// sentinels; what is well formed but not readable wraps ErrUnsupported;
// and a handle whose files cannot be a RocksDB directory is corrupt.
func TestNativeHandleErrors(t *testing.T) {
	sc := newScenario(t)
	ctx := context.Background()
	read := func(t *testing.T, files []nativeFile) (*Keyed, error) {
		t.Helper()
		dir := writeNative(t, t.TempDir(), ".", 128, keygroup.Range{Start: 0, End: 63}, nativeHeader(), nil, files)
		r, err := Open(ctx, storage.LocalDir(dir), Options{})
		if err != nil {
			t.Fatal(err)
		}
		k, err := r.Keyed(ctx, r.Metadata().Operators[0])
		if err != nil {
			return nil, err
		}
		it := k.Entries(ctx, -1, keygroup.All(128))
		for it.Next() {
		}
		return k, it.Err()
	}
	replace := func(i int, f nativeFile) []nativeFile {
		files := slices.Clone(sc.files)
		files[i] = f
		return files
	}

	t.Run("checksum", func(t *testing.T) {
		damaged := bytes.Clone(sc.files[0].data)
		damaged[3] ^= 0x40 // inside the first data block
		_, err := read(t, replace(0, relFile("000010.sst", "table-0", damaged)))
		var e *Error
		if !errors.Is(err, ErrCorrupt) || !errors.Is(err, snapshotfmt.ErrCorrupt) || !errors.Is(err, sst.ErrCorrupt) || !errors.As(err, &e) {
			t.Fatalf("error %v", err)
		}
		if e.File != "table-0 (000010.sst)" || e.KeyGroup < 0 || e.Offset != 0 || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("error %v located at %q, key group %d, offset %d", err, e.File, e.KeyGroup, e.Offset)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		_, err := read(t, replace(3, relFile("000013.sst", "table-3", sc.files[3].data[:40])))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "table-3 (000013.sst)") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		f := sc.files[0]
		f.at = ""
		_, err := read(t, replace(0, f))
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "table-0") {
			t.Errorf("error %v", err)
		}
	})
	// RocksDB opens a database by its CURRENT and the MANIFEST it names:
	// the reader needs neither, but a checkpoint without them does not
	// restore.
	t.Run("database files", func(t *testing.T) {
		// The scenario's last two files are its MANIFEST and CURRENT.
		manifest := relFile("MANIFEST-000004", "manifest-4", []byte("manifest bytes"))
		for _, c := range []struct {
			name  string
			files []nativeFile
			want  string
		}{
			{"manifest missing", []nativeFile{relFile("CURRENT", "current", []byte("MANIFEST-000004\n")), {local: manifest.local, ref: manifest.ref}}, "manifest-4"},
			{"manifest short", []nativeFile{relFile("CURRENT", "current", []byte("MANIFEST-000004\n")),
				{local: manifest.local, at: manifest.at, data: manifest.data[:3], ref: manifest.ref}}, "manifest-4 (MANIFEST-000004) holds 3 bytes, the metadata records 14"},
			{"current names another", []nativeFile{relFile("CURRENT", "current", []byte("MANIFEST-000005\n")), manifest}, `current (CURRENT) reads "MANIFEST-000005\n"`},
			{"current empty", []nativeFile{relFile("CURRENT", "current", nil), manifest}, `current (CURRENT) reads ""`},
			{"current missing", []nativeFile{{local: "CURRENT", ref: relFile("CURRENT", "current", []byte("MANIFEST-000004\n")).ref}, manifest}, "current"},
		} {
			_, err := read(t, append(slices.Clone(sc.files[:len(sc.files)-2]), c.files...))
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrCorrupt) && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %v, want %q", c.name, err, c.want)
			}
		}
		if _, err := read(t, sc.files); err != nil {
			t.Errorf("whole: %v", err)
		}
	})
	t.Run("unknown column family", func(t *testing.T) {
		ghost := nativeTable(t, "ghost", []sstbuild.Entry{set(nkey(1, "x"), 1, long(1))}, sstbuild.Options{ColumnFamilyID: 9})
		_, err := read(t, append(slices.Clone(sc.files), relFile("000099.sst", "ghost", ghost)))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"ghost"`) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("other merge operator", func(t *testing.T) {
		add := nativeTable(t, "visits", []sstbuild.Entry{merge(nkey(1, "x"), 1, long(1))}, sstbuild.Options{ColumnFamilyID: 1, MergeOperator: "UInt64AddOperator"})
		files := []nativeFile{relFile("000001.sst", "add", add)}
		_, err := read(t, files)
		if !errors.Is(err, ErrUnsupported) || !errors.Is(err, sst.ErrUnsupported) || !strings.Contains(err.Error(), "UInt64AddOperator") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("write-ahead log", func(t *testing.T) {
		k, err := read(t, append(slices.Clone(sc.files), relFile("000003.log", "wal", []byte("records"))))
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "000003.log") || len(k.States) != 4 {
			t.Errorf("error %v", err)
		}
		// An empty log, as Flink leaves it, is nothing to replay.
		if _, err := read(t, append(slices.Clone(sc.files), relFile("000003.log", "wal", nil))); err != nil {
			t.Errorf("empty log: %v", err)
		}
	})
	t.Run("unknown file", func(t *testing.T) {
		k, err := read(t, append(slices.Clone(sc.files), relFile("IDENTITY", "identity", []byte("id"))))
		if err != nil || len(k.Notes) != 1 || !strings.Contains(k.Notes[0], "IDENTITY") {
			t.Errorf("error %v, notes %q", err, k.Notes)
		}
	})
	for _, c := range []struct{ name, local string }{{"path", "../000010.sst"}, {"directory", "sub/000010.sst"}, {"duplicate", "000011.sst"}} {
		t.Run(c.name, func(t *testing.T) {
			f := sc.files[0]
			f.local = c.local
			_, err := read(t, replace(0, f))
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.local) {
				t.Errorf("error %v", err)
			}
		})
	}
	t.Run("bytes after the header", func(t *testing.T) {
		dir := t.TempDir()
		header := nativeHeader().u8(0)
		writeNative(t, dir, ".", 128, keygroup.Range{Start: 0, End: 63}, header, nil, sc.files)
		r, err := Open(ctx, storage.LocalDir(dir), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Keyed(ctx, r.Metadata().Operators[0]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("list delimiter", func(t *testing.T) {
		// A list joined with another delimiter is not Flink's layout.
		options := "[Version]\n  rocksdb_version=8.10.0\n[CFOptions \"items\"]\n  merge_operator={id=StringAppendTESTOperator;delimiter=|;}\n"
		files := []nativeFile{
			relFile("000001.sst", "a", nativeTable(t, "items", []sstbuild.Entry{set(nkey(1, "x"), 1, long(1)), merge(nkey(1, "x"), 2, long(2))}, sstbuild.Options{ColumnFamilyID: 2})),
			relFile("OPTIONS-000005", "o", []byte(options)),
		}
		_, err := read(t, files)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "delimiter") {
			t.Errorf("error %v", err)
		}
	})
}
