package flinkfmt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/sstbuild"
	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// maxSeedSize keeps the fuzzers' seeds to small fixtures.
const maxSeedSize = 16 << 10

// seedMetadata adds the small _metadata files of the fixtures, read in
// place.
func seedMetadata(f *testing.F) {
	root, rows := inventory(f)
	for _, row := range rows {
		b, err := os.ReadFile(filepath.Join(root, row.dir, MetadataFile))
		if err == nil && len(b) <= maxSeedSize {
			f.Add(b)
		}
	}
}

// FuzzMetadata parses arbitrary _metadata bytes: it must never panic, and
// whatever parses must have bounded, consistent handles.
func FuzzMetadata(f *testing.F) {
	seedMetadata(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMetadata(b)
		if err != nil {
			return
		}
		for _, op := range m.Operators {
			for _, st := range op.Subtasks {
				if h := st.ManagedKeyed; h != nil && len(h.Offsets) > 0 && h.KeyGroups.Len() != len(h.Offsets) {
					t.Fatalf("key groups %v with %d offsets", h.KeyGroups, len(h.Offsets))
				}
			}
		}
	})
}

// seedKeyedStreams adds the first bytes of the fixtures' inline keyed
// streams: a header and the first key groups.
func seedKeyedStreams(f *testing.F) {
	root, rows := inventory(f)
	n := 0
	for _, row := range rows {
		r, err := Open(context.Background(), storage.LocalDir(filepath.Join(root, row.dir)), Options{})
		if err != nil {
			continue
		}
		for _, op := range r.Metadata().Operators {
			for _, st := range op.Subtasks {
				if h := st.ManagedKeyed; h != nil && h.Stream != nil && h.Stream.Kind == StreamInline && len(h.Stream.Data) <= maxSeedSize {
					f.Add(h.Stream.Data, uint16(op.MaxParallelism), uint16(h.KeyGroups.Start))
					n++
				}
				if h := st.ManagedOperator; h != nil && h.Stream != nil && h.Stream.Kind == StreamInline && len(h.Stream.Data) <= maxSeedSize {
					f.Add(h.Stream.Data, uint16(op.MaxParallelism), uint16(0))
				}
				if h := st.RawKeyed; h != nil && h.Stream != nil && h.Stream.Kind == StreamInline && len(h.Stream.Data) <= maxSeedSize {
					f.Add(h.Stream.Data, uint16(op.MaxParallelism), uint16(h.KeyGroups.Start))
				}
			}
		}
	}
	if n == 0 {
		f.Add([]byte{0, 0, 0, 6, 0}, uint16(128), uint16(0))
	}
}

// FuzzKeyedStream parses state streams: as an operator-state stream with
// its elements, as legacy raw keyed timers, and as a keyed-stream header
// followed by one key group, in both layouts, decoding every entry it
// yields.
func FuzzKeyedStream(f *testing.F) {
	seedKeyedStreams(f)
	f.Fuzz(func(t *testing.T, b []byte, maxP, kg uint16) {
		if metas, compressed, err := parseOperatorHeader(wire.New(b, 0)); err == nil {
			for _, m := range metas {
				os := &OperatorState{Name: m.Name, Element: m.Serializers[valueSerializerKey], Key: m.Serializers[keySerializerKey], Value: m.Serializers[valueSerializerKey]}
				offs := []int64{int64(kg) % int64(len(b)+1)}
				mode := SplitDistribute
				if m.Backend == BroadcastMap {
					mode = Broadcast
				}
				_, _ = readOperatorState(b, compressed, "fuzz", 0, OperatorStateOffsets{Name: m.Name, Mode: mode, Offsets: offs}, os, offs, 1<<20)
			}
		}
		_, _ = parseRawTimers(wire.New(b, 0))
		r := wire.New(b, 0)
		h, err := ParseKeyedHeader(r)
		if err != nil || len(h.States) == 0 {
			return
		}
		if maxP == 0 || maxP > 32768 {
			maxP = 128
		}
		op := &Operator{MaxParallelism: int(maxP)}
		k := &Keyed{Operator: op, Key: h.Key, States: h.States}
		sk := &subtaskKeyed{header: h}
		for i := range h.States {
			sk.ids = append(sk.ids, i)
		}
		rest := b[h.End:]
		for _, layout := range []Layout{LayoutCanonical, LayoutHeap} {
			var out []Entry
			p := &kgParser{k: k, sk: sk, kg: int(kg) % int(maxP), state: -1, out: &out, prefix: prefixLen(int(maxP))}
			if layout == LayoutHeap {
				_ = p.heap(wire.New(rest, 0))
			} else {
				_ = p.canonical(wire.New(rest, 0))
			}
			for _, e := range out {
				m := k.States[e.State]
				_, _ = k.Key.Decode(e.Key)
				if m.Kind != Timers {
					_, _ = m.Namespace.Decode(e.Namespace)
					_, _ = m.Stored.Decode(e.Value)
				}
			}
		}
	})
}

// memDir is a storage.Dir in memory, so that fuzzing does not write files.
type memDir map[string][]byte

func (d memDir) Open(_ context.Context, name string) (storage.File, error) {
	b, ok := d[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return inlineFile{bytes.NewReader(b)}, nil
}

func (d memDir) List(context.Context) ([]string, error) {
	var names []string
	for n := range d {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (memDir) Location() string { return "memory" }

// fuzzColumnFamilies are the column families of nativeHeader's states, the
// default column family and one that no state names.
var fuzzColumnFamilies = []string{"visits", "items", "attrs", "_timer_state/event_t", "default", "ghost"}

// nativeFuzzTables turns bytes into tables: records of a selector (column
// family, and which of three tables), a kind, a key and a value, each with
// a one-byte length; the record's index is its sequence number. A kind of
// 0x0F makes a range deletion from the key to the value.
func nativeFuzzTables(t testing.TB, b []byte) map[string][]byte {
	type part struct {
		cf   string
		es   []sstbuild.Entry
		tomb []sstbuild.Tombstone
	}
	parts := map[[2]int]*part{}
	for seq := uint64(1); len(b) >= 4; seq++ {
		sel, kind := int(b[0]), b[1]
		n := min(int(b[2]), len(b)-3)
		key := b[3 : 3+n]
		b = b[3+n:]
		var val []byte
		if len(b) > 0 {
			m := min(int(b[0]), len(b)-1)
			val, b = b[1:1+m], b[1+m:]
		}
		id := [2]int{sel % len(fuzzColumnFamilies), sel / len(fuzzColumnFamilies) % 3}
		p := parts[id]
		if p == nil {
			p = &part{cf: fuzzColumnFamilies[id[0]]}
			parts[id] = p
		}
		switch kind & 0x0F {
		case 0x0F:
			p.tomb = append(p.tomb, sstbuild.Tombstone{Start: key, End: val, Seq: seq})
		case sstbuild.Delete, sstbuild.SingleDelete, sstbuild.Merge:
			p.es = append(p.es, sstbuild.Entry{UserKey: key, Seq: seq, Kind: kind & 0x0F, Value: val})
		default:
			p.es = append(p.es, set(key, seq, val))
		}
	}
	files := map[string][]byte{}
	for id, p := range parts {
		name := fmt.Sprintf("%06d.sst", id[0]*3+id[1])
		files[name] = nativeTable(t, p.cf, p.es, sstbuild.Options{ColumnFamilyID: uint64(id[0]), Tombstones: p.tomb, BlockSize: 64})
	}
	return files
}

// fuzzRecord encodes one record of nativeFuzzTables' input.
func fuzzRecord(cf, table int, kind byte, key, val []byte) []byte {
	return append(append([]byte{byte(table*len(fuzzColumnFamilies) + cf), kind, byte(len(key))}, key...), append([]byte{byte(len(val))}, val...)...)
}

// nativeFuzzSeed has a record of every kind in every column family.
func nativeFuzzSeed() []byte {
	var seed []byte
	seed = append(seed, fuzzRecord(0, 0, sstbuild.Set, nkey(1, "alice"), long(1))...)
	seed = append(seed, fuzzRecord(0, 1, sstbuild.Delete, nkey(1, "bob"), nil)...)
	seed = append(seed, fuzzRecord(0, 0, sstbuild.Set, nkey(1, "bob"), long(2))...)
	seed = append(seed, fuzzRecord(0, 0, sstbuild.Set, nkey(2, "carol"), long(3))...)
	seed = append(seed, fuzzRecord(0, 2, 0x0F, []byte{2}, []byte{3})...)
	seed = append(seed, fuzzRecord(1, 0, sstbuild.Set, nkey(1, "alice"), long(1, 2))...)
	seed = append(seed, fuzzRecord(1, 1, sstbuild.Merge, nkey(1, "alice"), long(3))...)
	seed = append(seed, fuzzRecord(2, 0, sstbuild.Set, nkey(5, "erin", "color"), bld(nil).u8(0).i64(5))...)
	seed = append(seed, fuzzRecord(2, 0, sstbuild.Set, nkey(5, "erin", "size"), []byte{1})...)
	seed = append(seed, fuzzRecord(3, 0, sstbuild.Set, timerKey(1, 1000, "alice"), nil)...)
	seed = append(seed, fuzzRecord(4, 0, sstbuild.Set, []byte("junk"), []byte("x"))...)
	seed = append(seed, fuzzRecord(0, 0, sstbuild.Set, nkey(100, "zed"), long(9))...)
	return seed
}

// readFuzzNative reads the native handle whose tables nativeFuzzTables
// builds from b and checks what it yields (values are decoded too, for
// panics); it returns the number of entries and the iterator's error.
func readFuzzNative(t *testing.T, b []byte) (int, error) {
	dir := memDir{}
	var files []nativeFile
	for name, data := range nativeFuzzTables(t, b) {
		files = append(files, relFile(name, "t"+name, data))
		dir["t"+name] = data
	}
	files = append(files, relFile("OPTIONS-000009", "options", []byte(testOptions)))
	dir["options"] = []byte(testOptions)
	sort.Slice(files, func(i, j int) bool { return files[i].local < files[j].local })
	dir[MetadataFile] = keyedMetadata(128, nativeHandle(keygroup.Range{Start: 0, End: 63}, nativeHeader(), nil, files))
	ctx := context.Background()
	r, err := Open(ctx, dir, Options{MaxKeyGroupBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	k, err := r.Keyed(ctx, r.Metadata().Operators[0])
	if err != nil {
		t.Fatal(err)
	}
	it := k.Entries(ctx, -1, keygroup.All(128))
	n, last := 0, -1
	for it.Next() {
		e := it.Entry()
		if e.KeyGroup < last || e.KeyGroup > 63 {
			t.Fatalf("key group %d after %d", e.KeyGroup, last)
		}
		last = e.KeyGroup
		m := k.States[e.State]
		if _, err := k.Key.Decode(e.Key); err != nil {
			t.Fatalf("key %x: %v", e.Key, err)
		}
		if m.Kind != Timers && !e.Null {
			// As in the canonical layout, a value is framed but decoded
			// only when asked for.
			_, _ = m.Stored.Decode(e.Value)
		}
		n++
	}
	it.Close()
	if err := it.Err(); err != nil {
		var fe *Error
		if !errors.As(err, &fe) || !(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported)) {
			t.Fatalf("error %v is not a located ErrCorrupt or ErrUnsupported", err)
		}
		return n, err
	}
	return n, nil
}

// The fuzzer's seed reads as its records say: alice's and bob's visits
// (carol's is deleted by the range), alice's three list elements, erin's
// two map entries and alice's timer; zed is outside the handle's key
// groups and the default column family is no state.
func TestNativeFuzzSeed(t *testing.T) {
	if n, err := readFuzzNative(t, nativeFuzzSeed()); n != 8 || err != nil {
		t.Errorf("%d entries, %v", n, err)
	}
	// A table of a column family that no state names.
	if _, err := readFuzzNative(t, fuzzRecord(5, 0, sstbuild.Set, nkey(1, "x"), long(1))); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ghost column family: %v", err)
	}
}

// FuzzNativeHandle reads native handles whose tables are built from the
// input, so that every entry passes the tables' checksums and reaches the
// key, list, map and timer parsing and the merge: it must never panic,
// every error must be a located ErrCorrupt or ErrUnsupported, and entries
// must come in ascending key groups of the handle with keys that decode.
func FuzzNativeHandle(f *testing.F) {
	f.Add(nativeFuzzSeed())
	f.Add(fuzzRecord(5, 0, sstbuild.Set, nkey(1, "x"), long(1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = readFuzzNative(t, b)
	})
}

// FuzzCheckpointRelative: whatever an absolute path says, the name it
// gives in the job's directory is a valid relative name that the path
// ends with, starting at a checkpoint directory's marker.
func FuzzCheckpointRelative(f *testing.F) {
	for _, p := range []string{"/a/job/shared/x", "/a/chk-3/x", "/a/taskowned/t/x", "/a/shared/../x", "/shared/", "chk-1/x"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, ok := checkpointRelative(p)
		if !ok {
			return
		}
		if storage.CheckName(rel) != nil || !strings.HasSuffix(p, rel) || !(p == rel || strings.HasSuffix(p, "/"+rel)) {
			t.Fatalf("%q gives %q", p, rel)
		}
		first, _, _ := strings.Cut(rel, "/")
		if _, chk := checkpointID(first); first != sharedDir && first != taskOwnedDir && !chk {
			t.Fatalf("%q gives %q", p, rel)
		}
	})
}
