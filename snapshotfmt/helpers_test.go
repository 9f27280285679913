package snapshotfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/ttl"
)

// memDir is an in-memory savepoint directory: storage.Dir for reading and
// a Target for writing, so that the hostile-input tests can run thousands
// of times a second.
type memDir struct {
	files     map[string][]byte
	published bool
}

func newMemDir() *memDir { return &memDir{files: map[string][]byte{}} }

func (m *memDir) Location() string { return "mem" }

func (m *memDir) Open(_ context.Context, name string) (storage.File, error) {
	if err := storage.CheckName(name); err != nil {
		return nil, err
	}
	b, ok := m.files[name]
	if !ok {
		return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
	}
	return memFile{bytes.NewReader(b)}, nil
}

func (m *memDir) List(context.Context) ([]string, error) {
	return slices.Sorted(maps.Keys(m.files)), nil
}

type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

func (m *memDir) Create(_ context.Context, name string) (io.WriteCloser, error) {
	if err := storage.CheckName(name); err != nil {
		return nil, err
	}
	if _, ok := m.files[name]; ok {
		return nil, fmt.Errorf("%s exists", name)
	}
	m.files[name] = nil
	return &memWriter{m: m, name: name}, nil
}

func (m *memDir) CreateNamed(ctx context.Context, stem, ext string) (storage.NamedWriter, error) {
	return &memNamed{m: m, stem: stem, ext: ext, h: storage.NewContentHash()}, nil
}

func (m *memDir) ComposeNamed(ctx context.Context, name string) (storage.Composer, error) {
	return nil, fmt.Errorf("%s: an in-memory directory composes nothing", name)
}

func (m *memDir) CopyNamed(ctx context.Context, _ storage.File, name string) error {
	return fmt.Errorf("%s: an in-memory directory copies nothing", name)
}

// memNamed is a content-named file of a memDir.
type memNamed struct {
	m         *memDir
	stem, ext string
	h         hash.Hash
	buf       bytes.Buffer
	name      string
}

func (w *memNamed) Write(p []byte) (int, error) { w.h.Write(p); return w.buf.Write(p) }

func (w *memNamed) Close() error {
	w.name = storage.NameByContent(w.stem, w.h.Sum(nil), w.ext)
	w.m.files[w.name] = w.buf.Bytes()
	return nil
}

func (w *memNamed) Name() string { return w.name }

// named returns the name of the data file created as stem: the one whose
// name is stem and a content suffix.
func (m *memDir) named(t testing.TB, stem string) string {
	t.Helper()
	var found []string
	for name := range m.files {
		if s, _ := dataFileStem(name); s == stem && name != stem {
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		t.Fatalf("data files named after %s: %v, want one", stem, found)
	}
	return found[0]
}

func (m *memDir) Publish(context.Context) error { m.published = true; return nil }

func (m *memDir) Abort() error {
	if !m.published {
		clear(m.files)
	}
	return nil
}

// clone copies the files, so that a test can damage one copy.
func (m *memDir) clone() *memDir {
	c := newMemDir()
	for k, v := range m.files {
		c.files[k] = bytes.Clone(v)
	}
	return c
}

type memWriter struct {
	m    *memDir
	name string
	buf  bytes.Buffer
}

func (w *memWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }
func (w *memWriter) Close() error {
	w.m.files[w.name] = w.buf.Bytes()
	return nil
}

func snap(k serializers.Kind, args ...serializers.Snapshot) serializers.Snapshot {
	return serializers.Snapshot{Kind: k, Args: args}
}

const sessionSchema = `{"type":"record","name":"Session","fields":[{"name":"id","type":"string"},{"name":"n","type":"long"}]}`

// testMeta is a keyed operator with every kind of state, a timer service,
// operator and broadcast state, and a non-keyed operator.
func testMeta() *savepoint.Metadata {
	week := ttl.New(7 * 24 * time.Hour)
	week.CleanupFullSnapshot = true
	week.CleanupIncremental = 10
	day := ttl.Config{TTL: 24 * time.Hour, Update: ttl.OnReadAndWrite, Visibility: ttl.ReturnExpiredIfNotCleanedUp, SweepBudget: 1000}
	return &savepoint.Metadata{
		ID:        42,
		CreatedAt: 1_700_000_000_000,
		Lineage:   []string{"prune-ttl from 41"},
		Operators: []savepoint.Operator{
			{
				UID: "features", Name: "SessionFeatures", Parallelism: 2, MaxParallelism: 16,
				KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
				States: []savepoint.KeyedState{
					{Name: "session", Kind: savepoint.Value, Namespace: snap(serializers.KindVoid),
						Value: serializers.Snapshot{Kind: serializers.KindAvro, Schema: sessionSchema}, TTL: &day},
					{Name: "events", Kind: savepoint.List, Namespace: snap(serializers.KindVoid), Value: snap(serializers.KindBytes)},
					{Name: "category-counts", Kind: savepoint.Map, Namespace: snap(serializers.KindVoid),
						MapKey: snap(serializers.KindString), Value: snap(serializers.KindInt64), TTL: &week},
					{Name: "sum", Kind: savepoint.Reducing, Namespace: snap(serializers.KindWindow), Value: snap(serializers.KindInt64)},
				},
				Timers: []savepoint.TimerService{{Name: "event-time", Namespace: snap(serializers.KindWindow)}},
				OperatorStates: []savepoint.OperatorState{{
					Name: "offsets", Distribution: savepoint.EvenSplit, Element: snap(serializers.KindInt64),
					Subtasks: [][][]byte{{{0, 1}, {0, 2}}, {{0, 3}}},
				}},
				BroadcastStates: []savepoint.BroadcastState{{
					Name: "rules", Key: snap(serializers.KindString),
					Value:   snap(serializers.KindNullable, snap(serializers.KindList, snap(serializers.KindInt32))),
					Entries: []savepoint.BroadcastEntry{{Key: []byte("a"), Value: []byte{1}}, {Key: []byte("b"), Value: []byte{}}},
				}},
			},
			{
				UID: "source", Name: "Source", Parallelism: 3, MaxParallelism: 128,
				OperatorStates: []savepoint.OperatorState{{
					Name: "positions", Distribution: savepoint.Union, Element: snap(serializers.KindInt64),
					Subtasks: [][][]byte{{[]byte("p0")}, nil, {[]byte("p2"), []byte("p2b")}},
				}},
			},
		},
	}
}

// segData is the entries of one segment of the test savepoint.
type segData struct {
	op, ref, kg int
	entries     []savepoint.Entry
}

func ts(t int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t)) }

func window(start, end int64) []byte { return binary.BigEndian.AppendUint64(ts(start), uint64(end)) }

// testData generates sorted entries for the keyed operator of testMeta:
// nKeys keys spread over the key groups, lists and maps long enough to span
// several small blocks, and one value larger than any block.
func testData(nKeys int) []segData {
	const maxP = 16
	byKG := map[int][]string{}
	for i := range nKeys {
		k := fmt.Sprintf("user-%04d", i)
		kg := keygroup.Of([]byte(k), maxP)
		byKG[kg] = append(byKG[kg], k)
	}
	var out []segData
	for _, kg := range slices.Sorted(maps.Keys(byKG)) {
		keys := byKG[kg]
		sort.Strings(keys)
		var value, list, mp, red, timers []savepoint.Entry
		for i, k := range keys {
			key := []byte(k)
			n := len(k) + i
			value = append(value, savepoint.Entry{Key: key, Value: append(ts(int64(1_700_000_000_000+n)), fmt.Sprintf("session of %s", k)...)})
			for j := range n % 7 {
				el := []byte(fmt.Sprintf("event %d of %s", j, k))
				if i == 0 && j == 1 && kg%2 == 0 {
					el = bytes.Repeat([]byte{byte(kg)}, 3000) // larger than a block
				}
				list = append(list, savepoint.Entry{Key: key, Value: el})
			}
			for j := range 1 + n%11 {
				mp = append(mp, savepoint.Entry{Key: key, MapKey: []byte(fmt.Sprintf("cat-%02d", j)),
					Value: append(ts(int64(1_699_000_000_000+n*1000+j)), byte(j))})
			}
			for j := range n % 3 {
				red = append(red, savepoint.Entry{Key: key, Namespace: window(int64(j)*60_000, int64(j+1)*60_000), Value: ts(int64(n * j))})
			}
			if n%2 == 0 {
				timers = append(timers, savepoint.Entry{Key: key, Namespace: window(0, 60_000), Timestamp: int64(1_700_000_000_000 + (n*7919)%1000)})
			}
		}
		slices.SortFunc(timers, func(a, b savepoint.Entry) int {
			return compareTimers(a.Timestamp, a.Key, a.Namespace, b.Timestamp, b.Key, b.Namespace)
		})
		for ref, es := range [][]savepoint.Entry{value, list, mp, red, timers} {
			if len(es) > 0 {
				out = append(out, segData{op: 0, ref: ref, kg: kg, entries: es})
			}
		}
	}
	return out
}

// writeSavepoint writes data into two data files (even and odd key groups)
// and publishes into dir.
func writeSavepoint(t testing.TB, dir Target, meta *savepoint.Metadata, data []segData, opts Options) {
	t.Helper()
	writeDataFiles(t, dir, meta, data, opts, 2)
}

// writeOneFile writes data into a single data file of a new in-memory
// savepoint.
func writeOneFile(t testing.TB, meta *savepoint.Metadata, data []segData, opts Options) *memDir {
	t.Helper()
	d := newMemDir()
	writeDataFiles(t, d, meta, data, opts, 1)
	return d
}

// writeDataFiles writes data, segment by segment in the order given, into
// n data files, key group kg into file kg mod n, and publishes into dir.
func writeDataFiles(t testing.TB, dir Target, meta *savepoint.Metadata, data []segData, opts Options, n int) {
	t.Helper()
	ctx := context.Background()
	w, err := NewWriter(dir, meta, opts)
	if err != nil {
		t.Fatal(err)
	}
	files := make([]*DataFileWriter, n)
	for i := range files {
		if files[i], err = w.CreateDataFile(ctx, fmt.Sprintf("data-%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, sd := range data {
		s, err := files[sd.kg%n].Segment(flatRef(files[sd.kg%n].w.meta, sd.op, sd.ref), sd.kg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range sd.entries {
			if err := s.Add(&sd.entries[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every entry of every segment of op, keyed like segData.
func readAll(t testing.TB, r *Reader, op int) []segData {
	t.Helper()
	var out []segData
	for _, seg := range opSegments(r, op) {
		sd := segData{op: op, ref: flat(r, seg), kg: seg.KeyGroup}
		it := r.iterate(context.Background(), seg)
		for it.Next() {
			e := it.Entry()
			sd.entries = append(sd.entries, savepoint.Entry{
				Key: bytes.Clone(e.Key), Namespace: bytes.Clone(e.Namespace), MapKey: bytes.Clone(e.MapKey),
				Value: bytes.Clone(e.Value), Timestamp: e.Timestamp,
			})
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		out = append(out, sd)
	}
	return out
}

func sameEntry(a, b *savepoint.Entry) bool {
	return bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Namespace, b.Namespace) && bytes.Equal(a.MapKey, b.MapKey) &&
		bytes.Equal(a.Value, b.Value) && a.Timestamp == b.Timestamp
}

// flatRef is the StateRef of segment ref n of operator op in meta, in the
// numbering of FORMAT.md that the tests' tables use; out of range, it is a
// ref that Metadata.Check refuses.
func flatRef(meta *savepoint.Metadata, op, n int) savepoint.StateRef {
	if op < 0 || op >= len(meta.Operators) || n < 0 {
		return savepoint.StateRef{Operator: op, State: n}
	}
	return stateRef(op, &meta.Operators[op], uint64(n))
}

// flat is the segment ref of FORMAT.md of seg.
func flat(r *Reader, seg savepoint.Segment) int {
	return int(diskRef(&r.meta.Operators[seg.Ref.Operator], seg.Ref))
}

// opSegments returns the segments of operator op in index order.
func opSegments(r *Reader, op int) []savepoint.Segment {
	return slices.Clone(r.idx.segments[op])
}

// verify reads every segment of r, which checks every block and record and
// every segment against its index entry.
func verify(ctx context.Context, r *Reader) error {
	for op := range r.idx.segments {
		for _, seg := range r.idx.segments[op] {
			it := r.iterate(ctx, seg)
			for it.Next() {
			}
			err := it.Err()
			it.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// withHistograms gives the state segments of a handmade index that have
// none the histograms of what their bytes in d hold, as far as those bytes
// read, so that a test of another rule meets that rule's error. Where the
// bytes do not read to the index's entry count, the histograms count the
// entries in bucket 0: the reader refuses those bytes before it compares
// histograms.
func withHistograms(d *memDir, m *savepoint.Metadata, idx *index) *index {
	ctx := context.Background()
	for op, segs := range idx.segments {
		o := &m.Operators[op]
		for i := range segs {
			s := &segs[i]
			if s.Ref.Timer || s.Sizes != nil {
				continue
			}
			var ttlMillis int64
			if c := o.States[s.Ref.State].TTL; c != nil {
				ttlMillis = c.Millis()
			}
			sh := shapeOf(o, s.Ref, s.KeyGroup)
			h := newHistCounts(sh, ttlMillis, m.CreatedAt)
			if f, err := d.Open(ctx, s.File); err == nil && s.Offset+s.Length <= f.Size() {
				br := newBlockReader(ctx, f, s.File, s)
				var e savepoint.Entry
				rr := newRecordReader(sh, &e, br)
				rr.hist = h
				for {
					rr.endBlock()
					if br.next() != nil {
						break
					}
					payload, more, err := br.payload()
					if err != nil {
						break
					}
					rr.startBlock(payload, more)
					for rr.next() {
					}
					if _, err := rr.failure(); err != nil || br.finish() != nil {
						break
					}
				}
				br.release()
			}
			var got savepoint.Stats
			h.fill(&got)
			if got.Sizes.Total() != s.Entries || h.ttl && got.Modified.Total() != s.Entries {
				got.Sizes = savepoint.Histogram{{Bucket: 0, Count: s.Entries}}
				if h.ttl {
					got.Modified, got.Anchor = got.Sizes, m.CreatedAt
				}
			}
			s.Sizes, s.Modified, s.Anchor = got.Sizes, got.Modified, got.Anchor
		}
	}
	return idx
}
