package snapshotfmt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"none", Options{BlockSize: 512}},
		{"zstd", Options{Compression: CodecZstd, BlockSize: 512}},
		{"default-blocks", Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			target := filepath.Join(t.TempDir(), "sp")
			stage, err := storage.Stage(target, false)
			if err != nil {
				t.Fatal(err)
			}
			meta, data := testMeta(), testData(300)
			writeSavepoint(t, stage, meta, data, tc.opts)

			r, err := Open(ctx, storage.LocalDir(target))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Version() != NewestVersion {
				t.Errorf("version %d, want %d", r.Version(), NewestVersion)
			}
			want := testMeta()
			if got := r.Metadata(); !reflect.DeepEqual(got, want) {
				t.Fatalf("metadata differs:\n got %+v\nwant %+v", got, want)
			}
			got := readAll(t, r, 0)
			if len(got) != len(data) {
				t.Fatalf("%d segments, want %d", len(got), len(data))
			}
			multiBlock := 0
			for i := range data {
				g, w := got[i], data[i]
				if g.ref != w.ref || g.kg != w.kg || len(g.entries) != len(w.entries) {
					t.Fatalf("segment %d: ref %d kg %d with %d entries, want ref %d kg %d with %d", i, g.ref, g.kg, len(g.entries), w.ref, w.kg, len(w.entries))
				}
				for j := range w.entries {
					if !sameEntry(&g.entries[j], &w.entries[j]) {
						t.Fatalf("segment %d entry %d: %+v, want %+v", i, j, g.entries[j], w.entries[j])
					}
				}
			}
			for _, seg := range opSegments(r, 0) {
				if seg.Bytes > 512 {
					multiBlock++
				}
			}
			if tc.opts.BlockSize == 512 && multiBlock < 10 {
				t.Errorf("only %d segments span several blocks", multiBlock)
			}
			if len(opSegments(r, 1)) != 0 {
				t.Errorf("non-keyed operator has segments")
			}
			if err := verify(ctx, r); err != nil {
				t.Fatal(err)
			}

			// Segments picks one state in a range of key groups.
			segs, err := r.Segments(ctx, flatRef(r.meta, 0, 2), keygroup.Range{Start: 3, End: 9})
			if err != nil {
				t.Fatal(err)
			}
			var kgs []int
			for _, s := range segs {
				if flat(r, s) != 2 {
					t.Fatalf("Segments returned ref %d", flat(r, s))
				}
				kgs = append(kgs, s.KeyGroup)
			}
			var wantKGs []int
			for _, sd := range data {
				if sd.ref == 2 && sd.kg >= 3 && sd.kg <= 9 {
					wantKGs = append(wantKGs, sd.kg)
				}
			}
			if !slices.Equal(kgs, wantKGs) {
				t.Fatalf("Segments key groups %v, want %v", kgs, wantKGs)
			}
		})
	}
}

// The zstd variant really compresses some blocks, or the test proves less
// than it claims.
func TestZstdIsUsed(t *testing.T) {
	d := newMemDir()
	writeSavepoint(t, d, testMeta(), testData(300), Options{Compression: CodecZstd, BlockSize: 4096})
	r, err := Open(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	var zstdBlocks int
	for _, seg := range opSegments(r, 0) {
		b := d.files[seg.File][seg.Offset:]
		if Codec(b[0]) == CodecZstd {
			zstdBlocks++
		}
	}
	if zstdBlocks == 0 {
		t.Fatal("no segment starts with a zstd block")
	}
}

func TestDeterministic(t *testing.T) {
	for _, opts := range []Options{{}, {Compression: CodecZstd, BlockSize: 1000}} {
		var dirs [2]string
		for i := range dirs {
			dirs[i] = filepath.Join(t.TempDir(), "sp")
			stage, err := storage.Stage(dirs[i], false)
			if err != nil {
				t.Fatal(err)
			}
			writeSavepoint(t, stage, testMeta(), testData(200), opts)
		}
		a, _ := storage.LocalDir(dirs[0]).List(context.Background())
		b, _ := storage.LocalDir(dirs[1]).List(context.Background())
		if !slices.Equal(a, b) {
			t.Fatalf("file lists differ: %v %v", a, b)
		}
		for _, name := range a {
			x, _ := os.ReadFile(filepath.Join(dirs[0], name))
			y, _ := os.ReadFile(filepath.Join(dirs[1], name))
			if !bytes.Equal(x, y) {
				t.Fatalf("%s differs between two writes of the same state", name)
			}
		}
	}
}

// With small blocks, list and map records continue across block
// boundaries; the round trip above only proves something about that if it
// happens.
func TestRecordsContinueAcrossBlocks(t *testing.T) {
	d := newMemDir()
	writeSavepoint(t, d, testMeta(), testData(300), Options{BlockSize: 100})
	r, err := Open(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	continued := map[int]int{}
	for _, seg := range opSegments(r, 0) {
		f := r.files[seg.File]
		br := newBlockReader(f, seg.File, &seg)
		var lastKey, lastNs []byte
		for br.next() == nil {
			payload, err := br.payload()
			if err != nil {
				t.Fatal(err)
			}
			var e savepoint.Entry
			rr := newRecordReader(shapeOf(&r.Metadata().Operators[0], seg.Ref, seg.KeyGroup), &e)
			rr.startBlock(payload)
			for first := true; rr.next(); first = false {
				if first && bytes.Equal(e.Key, lastKey) && bytes.Equal(e.Namespace, lastNs) {
					continued[flat(r, seg)]++
				}
				lastKey, lastNs = bytes.Clone(e.Key), bytes.Clone(e.Namespace)
			}
		}
	}
	if continued[1] == 0 || continued[2] == 0 {
		t.Fatalf("records continued across blocks: list %d, map %d; want both > 0", continued[1], continued[2])
	}
}

// Data files are written from several goroutines, and one Reader serves
// several goroutines; run with -race.
func TestConcurrentWritersAndReaders(t *testing.T) {
	ctx := context.Background()
	meta, data := testMeta(), testData(200)
	d := newMemDir()
	var mu sync.Mutex // memDir itself is not safe for concurrent use
	w, err := NewWriter(lockedStaging{d, &mu}, meta, Options{Compression: CodecZstd, BlockSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	var g errgroup
	for part := range 2 {
		g.Go(func() error {
			f, err := w.CreateDataFile(ctx, fmt.Sprintf("data-%03d", part))
			if err != nil {
				return err
			}
			for _, sd := range data {
				if sd.kg%2 != part {
					continue
				}
				s, err := f.Segment(flatRef(f.w.meta, sd.op, sd.ref), sd.kg)
				if err != nil {
					return err
				}
				for i := range sd.entries {
					if err := s.Add(&sd.entries[i]); err != nil {
						return err
					}
				}
				if err := s.Close(); err != nil {
					return err
				}
			}
			return f.Close()
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	// The same bytes as a sequential write.
	seq := newMemDir()
	writeSavepoint(t, seq, testMeta(), data, Options{Compression: CodecZstd, BlockSize: 300})
	for name, b := range seq.files {
		if !bytes.Equal(d.files[name], b) {
			t.Errorf("%s differs between a concurrent and a sequential write", name)
		}
	}

	r, err := Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	segs := opSegments(r, 0)
	var rg errgroup
	for part := range 4 {
		rg.Go(func() error {
			for i := part; i < len(segs); i += 4 {
				it := r.iterate(ctx, segs[i])
				n := uint64(0)
				for it.Next() {
					n++
				}
				if err := it.Err(); err != nil {
					return err
				}
				if n != segs[i].Entries {
					return fmt.Errorf("segment %d: %d entries, want %d", i, n, segs[i].Entries)
				}
			}
			return nil
		})
	}
	if err := rg.Wait(); err != nil {
		t.Fatal(err)
	}
}

type lockedStaging struct {
	d  *memDir
	mu *sync.Mutex
}

func (l lockedStaging) Create(ctx context.Context, name string) (io.WriteCloser, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, err := l.d.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return lockedWriter{w, l.mu}, nil
}

func (l lockedStaging) Publish(ctx context.Context) error { return l.d.Publish(ctx) }
func (l lockedStaging) Abort() error                      { return l.d.Abort() }

type lockedWriter struct {
	io.WriteCloser
	mu *sync.Mutex
}

func (l lockedWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.WriteCloser.Close()
}

// errgroup is the little of golang.org/x/sync/errgroup these tests need.
type errgroup struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func (g *errgroup) Go(f func() error) {
	g.wg.Go(func() {
		if err := f(); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, err)
			g.mu.Unlock()
		}
	})
}

func (g *errgroup) Wait() error {
	g.wg.Wait()
	return errors.Join(g.errs...)
}
