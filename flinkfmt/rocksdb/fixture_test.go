package rocksdb_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/bits"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/stateproc/stateproc/flinkfmt/rocksdb"
	"github.com/stateproc/stateproc/flinkfmt/rocksdb/internal/fixture"
	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
	"github.com/stateproc/stateproc/storage"
)

func openFile(t *testing.T, path string) storage.File {
	t.Helper()
	f, err := storage.LocalDir(filepath.Dir(path)).Open(context.Background(), filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// flinkKeyGroup is Flink's KeyGroupRangeAssignment for a key whose Java
// hashCode is code: MathUtils.murmurHash, then modulo max parallelism.
func flinkKeyGroup(code int32, maxP int) int {
	h := uint32(code) * 0xcc9e2d51
	h = bits.RotateLeft32(h, 15) * 0x1b873593
	h = bits.RotateLeft32(h, 13)*5 + 0xe6546b64
	h ^= 4
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	c := int32(h)
	switch {
	case c == math.MinInt32:
		c = 0
	case c < 0:
		c = -c
	}
	return int(c) % maxP
}

// TestFlinkKeyGroup pins the hash to the vectors that NOTES.md verified on
// the fixtures (Integer keys at max parallelism 128).
func TestFlinkKeyGroup(t *testing.T) {
	for _, c := range [][2]int{{4, 7}, {9, 51}, {1, 86}} {
		if got := flinkKeyGroup(int32(c[0]), 128); got != c[1] {
			t.Errorf("key %d: key group %d, want %d", c[0], got, c[1])
		}
	}
}

// entry is one merged entry of a column family with the handle it came
// from.
type entry struct {
	key, value []byte
	kg         int
}

// handleState is what one handle holds: its OPTIONS and, per column
// family, the merged entries read key group by key group.
type handleState struct {
	h       fixture.Handle
	opts    *Options
	entries map[string][]entry
}

// readHandle merges a handle's tables per column family and reads every
// key group of its range with SeekPrefix, checking that a scan of the
// whole column family finds nothing outside the range.
func readHandle(t *testing.T, h fixture.Handle, maxP int) handleState {
	t.Helper()
	if h.MaxParallelism != maxP {
		t.Fatalf("%s: max parallelism %d, want %d", h.Options(), h.MaxParallelism, maxP)
	}
	opts, err := ReadOptions(openFile(t, h.Options()), h.Options())
	if err != nil {
		t.Fatal(err)
	}
	var tables []*sst.Table
	for _, name := range h.Tables() {
		tab, err := sst.Open(openFile(t, h.Files[name]), h.Files[name], sst.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tab)
	}
	cfs, err := Group(tables, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := handleState{h: h, opts: opts, entries: map[string][]entry{}}
	for _, cf := range cfs {
		o, ok := opts.ColumnFamily(cf.Name)
		if !ok || o.MergeOperator != StringAppendTESTOperator || o.Comparator != sst.BytewiseComparator {
			t.Fatalf("%s: column family %q in OPTIONS: %v %+v", h.Options(), cf.Name, ok, o)
		}
		it := cf.NewIter()
		for kg := h.KeyGroups.Start; kg <= h.KeyGroups.End; kg++ {
			p, err := KeyGroupPrefix(kg, maxP)
			if err != nil {
				t.Fatal(err)
			}
			for ok := it.SeekPrefix(p); ok; ok = it.Next() {
				hs.entries[cf.Name] = append(hs.entries[cf.Name], entry{key: slices.Clone(it.Key()), value: slices.Clone(it.Value()), kg: kg})
			}
		}
		all := 0
		for ok := it.First(); ok; ok = it.Next() {
			all++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		var stored uint64
		for _, tab := range cf.Tables() {
			stored += tab.Properties().NumEntries
		}
		if uint64(all) > stored {
			t.Errorf("%s: column family %q: %d live keys from %d stored entries", h.Options(), cf.Name, all, stored)
		}
		if all != len(hs.entries[cf.Name]) {
			t.Errorf("%s: column family %q: %d keys, %d of them in key groups %v", h.Options(), cf.Name, all, len(hs.entries[cf.Name]), h.KeyGroups)
		}
	}
	return hs
}

func be64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// checkLongKey checks a key of Flink's layout [key group][8-byte long][rest]
// against Flink's key-group assignment of a Long (hashCode = value for the
// small keys of these tests) and returns the long and the rest.
func checkLongKey(t *testing.T, where string, e entry, maxP int) (int64, []byte) {
	t.Helper()
	if len(e.key) < 9 || int(e.key[0]) != e.kg {
		t.Fatalf("%s: key %x in key group %d", where, e.key, e.kg)
	}
	k := be64(e.key[1:9])
	if want := flinkKeyGroup(int32(k^k>>32), maxP); want != e.kg {
		t.Errorf("%s: key %d in key group %d, Flink assigns %d", where, k, e.kg, want)
	}
	return k, e.key[9:]
}

// TestStatefulJobSnapshotMigration reads the RocksDB checkpoints and native
// savepoints of Flink's StatefulJobSnapshotMigrationITCase (the
// new-stateful-udf-migration-itcase fixtures): parallelism and max
// parallelism 4, two pipelines each of a keyed flat map with ValueState
// "state-name" and a timely operator with "state-name" under a Long
// namespace plus an event-time and a processing-time timer per key, over
// the elements (i, i) for i in 0..3.
func TestStatefulJobSnapshotMigration(t *testing.T) {
	const maxP = 4
	n := 0
	for _, dir := range fixture.Dirs(t) {
		if !strings.Contains(dir, "/new-stateful-udf-migration-itcase-") {
			continue
		}
		n++
		hs := fixture.Handles(t, dir)
		t.Logf("%s: %d handles", filepath.Base(dir), len(hs))
		version := "6.20.3"
		if strings.Contains(dir, "flink2.0") {
			version = "8.10.0"
		}
		counts := map[string]int{}
		for _, h := range hs {
			st := readHandle(t, h, maxP)
			if st.opts.RocksDBVersion != version {
				t.Errorf("%s: RocksDB %q, want %q", h.Options(), st.opts.RocksDBVersion, version)
			}
			_, timely := st.opts.ColumnFamily("_timer_state/event_timer")
			for cf, es := range st.entries {
				for _, e := range es {
					where := filepath.Base(dir) + " " + cf
					if len(e.key) < 9 || int(e.key[0]) != e.kg {
						t.Fatalf("%s: key %x in key group %d", where, e.key, e.kg)
					}
					k, rest := be64(e.key[1:9]), e.key[9:]
					if !strings.HasPrefix(cf, "_timer_state/") {
						checkLongKey(t, where, e, maxP)
					}
					switch {
					case cf == "state-name" && !timely:
						// Key, VoidNamespace; value f1 == key.
						if k < 0 || k > 3 || len(rest) != 1 || rest[0] != 0 || len(e.value) != 8 || be64(e.value) != k {
							t.Errorf("%s: key %x value %x", where, e.key, e.value)
						}
						counts["flatmap"]++
					case cf == "state-name":
						// Key, namespace f0 (the key again); value f1.
						if k < 0 || k > 3 || len(rest) != 8 || be64(rest) != k || len(e.value) != 8 || be64(e.value) != k {
							t.Errorf("%s: key %x value %x", where, e.key, e.value)
						}
						counts["timely"]++
					case strings.HasPrefix(cf, "_timer_state/"):
						// Timestamp with its sign bit flipped, key, namespace.
						if len(rest) != 16 || len(e.value) != 0 {
							t.Fatalf("%s: timer %x value %x", where, e.key, e.value)
						}
						ts := k ^ math.MinInt64
						key, ns := be64(rest[:8]), be64(rest[8:])
						if key < 0 || key > 3 || ns != key {
							t.Errorf("%s: timer key %d namespace %d", where, key, ns)
						}
						switch cf {
						case "_timer_state/event_timer":
							// currentWatermark()+10: Long.MIN_VALUE or, once the
							// sources' Watermark(0) has arrived, 0.
							if ts != 10 && ts != math.MinInt64+10 {
								t.Errorf("%s: event timer at %d", where, ts)
							}
						case "_timer_state/processing_timer":
							// currentProcessingTime()+30s: a wall-clock time.
							if ts < 1_600_000_000_000 {
								t.Errorf("%s: processing timer at %d", where, ts)
							}
						}
						counts[cf]++
						// The timer's key group is its key's, not its
						// timestamp's.
						if want := flinkKeyGroup(int32(key), maxP); want != e.kg {
							t.Errorf("%s: timer of key %d in key group %d, Flink assigns %d", where, key, e.kg, want)
						}
					default:
						t.Errorf("%s: unexpected column family", where)
					}
				}
			}
		}
		want := map[string]int{"flatmap": 8, "timely": 8, "_timer_state/event_timer": 8, "_timer_state/processing_timer": 8}
		if !mapsEqual(counts, want) {
			t.Errorf("%s: counts %v, want %v", filepath.Base(dir), counts, want)
		}
	}
	if n != 12 {
		t.Errorf("%d fixture directories, want 12 (Flink 1.16 to 2.0, checkpoint and native savepoint)", n)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestScalaSavepointMigration reads the fixtures of Flink's Scala
// StatefulJobSavepointMigrationITCase and StatefulJobWBroadcastStateMigrationITCase:
// max parallelism 4, a keyed flat map over (i, i) for i in 0..3, keyed by
// i through a Java KeySelector (so the key is a Kryo-serialized
// java.lang.Long: class tag 9, then the zigzag varint), with ten
// ValueStates of Scala types; enumThreeState is declared but never
// written, so its column family holds no table.
func TestScalaSavepointMigration(t *testing.T) {
	const maxP = 4
	cc := func(s string, n int64) []byte { // CustomCaseClass(s, n)
		return append([]byte{byte(len(s) + 1)}, append([]byte(s), binary.BigEndian.AppendUint64(nil, uint64(n))...)...)
	}
	cat := func(bs ...[]byte) []byte { return slices.Concat(bs...) }
	want := map[string]func(k int64) []byte{
		"caseClassState":            func(k int64) []byte { return cc(itoa(k), 2*k) },
		"caseClassWithNestingState": func(k int64) []byte { return cat(binary.BigEndian.AppendUint64(nil, uint64(k)), cc(itoa(k), 2*k)) },
		"collectionState":           func(k int64) []byte { return cat([]byte{0, 0, 0, 1, 1}, cc(itoa(k), 2*k)) },
		"tryState":                  func(k int64) []byte { return cat([]byte{1}, cc(itoa(k), 5*k)) },
		"optionState":               func(k int64) []byte { return cat([]byte{1}, cc(itoa(k), 2*k)) },
		"optionNoneState":           func(int64) []byte { return []byte{0} },
		"eitherLeftState":           func(k int64) []byte { return cat([]byte{1}, cc(itoa(k), 2*k)) },
		"eitherRightState":          func(k int64) []byte { return cat([]byte{0}, []byte{2, byte('0' + 3*k)}) },
		// ONE, then THREE (ordinal 2) over it: the newest value.
		"enumOneState": func(int64) []byte { return []byte{0, 0, 0, 2} },
	}
	n := 0
	for _, dir := range fixture.Dirs(t) {
		if !strings.Contains(dir, "/stateful-scala-") {
			continue
		}
		n++
		hs := fixture.Handles(t, dir)
		keys := map[string][]int64{}
		for _, h := range hs {
			st := readHandle(t, h, maxP)
			for _, cf := range st.opts.ColumnFamilies {
				// The broadcast variant's keyed broadcast functions declare
				// timer services and never set a timer.
				timers := strings.HasPrefix(cf.Name, "_timer_state/") && strings.Contains(dir, "with-broadcast")
				if cf.Name != "default" && want[cf.Name] == nil && cf.Name != "tryFailureState" && cf.Name != "enumThreeState" && !timers {
					t.Errorf("%s: unexpected column family %q", h.Options(), cf.Name)
				}
			}
			for cf, es := range st.entries {
				for _, e := range es {
					where := filepath.Base(dir) + " " + cf
					if len(e.key) != 4 || int(e.key[0]) != e.kg || e.key[1] != 9 || e.key[3] != 0 {
						t.Fatalf("%s: key %x in key group %d", where, e.key, e.kg)
					}
					k, _ := binary.Varint(e.key[2:3])
					if kg := flinkKeyGroup(int32(k), maxP); kg != e.kg {
						t.Errorf("%s: key %d in key group %d, Flink assigns %d", where, k, e.kg, kg)
					}
					keys[cf] = append(keys[cf], k)
					if cf == "tryFailureState" {
						// Failure(new RuntimeException): tag 0, then the
						// exception, Java-serialized.
						if e.value[0] != 0 || !bytes.Contains(e.value, []byte("java.lang.RuntimeException")) {
							t.Errorf("%s: key %d value %x", where, k, e.value)
						}
						continue
					}
					if w := want[cf](k); !bytes.Equal(e.value, w) {
						t.Errorf("%s: key %d value %x, want %x", where, k, e.value, w)
					}
				}
			}
		}
		if len(keys) != len(want)+1 {
			t.Errorf("%s: %d column families with keys, want %d", filepath.Base(dir), len(keys), len(want)+1)
		}
		for cf, ks := range keys {
			slices.Sort(ks)
			if !slices.Equal(ks, []int64{0, 1, 2, 3}) {
				t.Errorf("%s: %s holds keys %v, want 0 to 3 once each", filepath.Base(dir), cf, ks)
			}
		}
	}
	if n != 19 {
		t.Errorf("%d fixture directories, want 19", n)
	}
}

func itoa(k int64) string { return strconv.FormatInt(k, 10) }

// TestTypeSerializerSnapshotMigration reads the fixtures of Flink's
// TypeSerializerSnapshotMigrationITCase: parallelism and max parallelism 1,
// a keyed map with ValueState "testState" holding f1 of (i, i) for i in
// 0..3 through a test serializer that writes a Long.
func TestTypeSerializerSnapshotMigration(t *testing.T) {
	n := 0
	for _, dir := range fixture.Dirs(t) {
		if !strings.Contains(dir, "/type-serializer-snapshot-migration-itcase-") {
			continue
		}
		n++
		hs := fixture.Handles(t, dir)
		var keys []int64
		for _, h := range hs {
			st := readHandle(t, h, 1)
			for cf, es := range st.entries {
				for _, e := range es {
					k, rest := checkLongKey(t, cf, e, 1)
					if cf != "testState" || len(rest) != 1 || rest[0] != 0 || be64(e.value) != k || len(e.value) != 8 {
						t.Errorf("%s %s: key %x value %x", filepath.Base(dir), cf, e.key, e.value)
					}
					keys = append(keys, k)
				}
			}
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []int64{0, 1, 2, 3}) {
			t.Errorf("%s: keys %v", filepath.Base(dir), keys)
		}
	}
	if n != 2 {
		t.Errorf("%d fixture directories, want 2", n)
	}
}

// TestBroadcastStateMigration reads the RocksDB fixtures of Flink's
// StatefulJobWBroadcastStateMigrationITCase: its keyed broadcast functions
// keep broadcast (operator) state only, so each keyed handle is an empty
// RocksDB instance: OPTIONS and MANIFEST, no table, timer column families
// declared.
func TestBroadcastStateMigration(t *testing.T) {
	n := 0
	for _, dir := range fixture.Dirs(t) {
		if !strings.Contains(dir, "/new-stateful-broadcast-udf-migration-itcase-") {
			continue
		}
		n++
		hs := fixture.Handles(t, dir)
		for _, h := range hs {
			if tabs := h.Tables(); len(tabs) != 0 {
				t.Errorf("%s: tables %v", dir, tabs)
			}
			opts, err := ReadOptions(openFile(t, h.Options()), h.Options())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, cf := range opts.ColumnFamilies {
				names = append(names, cf.Name)
			}
			slices.Sort(names)
			if want := []string{"_timer_state/event_user-timers", "_timer_state/processing_user-timers", "default"}; !slices.Equal(names, want) {
				t.Errorf("%s: column families %q, want %q", h.Options(), names, want)
			}
		}
	}
	if n != 11 {
		t.Errorf("%d fixture directories, want 11", n)
	}
}
