package pebblebackend

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

const benchKeys = 100_000

// benchValueState returns a backend with an int64 value for each of 100k
// string keys, the shape of the heap backend's benchmarks, flushed so that
// reads go through SSTs and the block cache as they do once state outgrows a
// memtable.
func benchValueState(b *testing.B) (*Backend, state.ValueState[int64], [][]byte) {
	be, err := New(Options{Dir: b.TempDir(), MaxParallelism: 128, KeyGroups: keygroup.All(128)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	v, err := state.GetValue(be, nil, state.NewValue("v", serializers.Int64()))
	if err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user-%06d", i))
		if err := be.SetCurrentKey(keys[i]); err != nil {
			b.Fatal(err)
		}
		if err := v.Update(int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := be.commitWrites(); err != nil {
		b.Fatal(err)
	}
	if err := be.db.Flush(); err != nil {
		b.Fatal(err)
	}
	return be, v, keys
}

func BenchmarkValueGet(b *testing.B) {
	be, v, keys := benchValueState(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := 0
	for b.Loop() {
		if err := be.SetCurrentKey(keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
		if _, ok, err := v.Value(); err != nil || !ok {
			b.Fatalf("Value() = %v, %v", ok, err)
		}
		i++
	}
}

func BenchmarkValueUpdate(b *testing.B) {
	be, v, keys := benchValueState(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := 0
	for b.Loop() {
		if err := be.SetCurrentKey(keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
		if err := v.Update(int64(i) + 1000); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// discardStaging is a snapshotfmt.Target that counts bytes and keeps none,
// so that the benchmark measures the scan, the encoding and the hashing
// that names data files, not the disk.
type discardStaging struct{ n int64 }

func (s *discardStaging) Create(context.Context, string) (io.WriteCloser, error) {
	return nopCloser{countingWriter{&s.n}}, nil
}

func (s *discardStaging) CreateNamed(_ context.Context, stem, ext string) (storage.NamedWriter, error) {
	return &discardNamed{countingWriter: countingWriter{&s.n}, h: storage.NewContentHash(), stem: stem, ext: ext}, nil
}

func (s *discardStaging) ComposeNamed(context.Context, string) (storage.Composer, error) {
	return nil, errors.New("discardStaging composes nothing")
}

func (s *discardStaging) CopyNamed(context.Context, storage.File, string) error {
	return errors.New("discardStaging copies nothing")
}

type discardNamed struct {
	countingWriter
	h         hash.Hash
	stem, ext string
	name      string
}

func (w *discardNamed) Write(p []byte) (int, error) {
	w.h.Write(p)
	return w.countingWriter.Write(p)
}

func (w *discardNamed) Close() error {
	w.name = storage.NameByContent(w.stem, w.h.Sum(nil), w.ext)
	return nil
}

func (w *discardNamed) Name() string                    { return w.name }
func (s *discardStaging) Publish(context.Context) error { return nil }
func (s *discardStaging) Abort() error                  { return nil }

type countingWriter struct{ n *int64 }

func (w countingWriter) Write(p []byte) (int, error) { *w.n += int64(len(p)); return len(p), nil }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// benchMaps declares map state md on be and puts a map of 10 entries under
// every tenth key.
func benchMaps(b *testing.B, be *Backend, clock state.Clock, md *state.MapDescriptor[string, int64], keys [][]byte) {
	m, err := state.GetMap(be, clock, md)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(keys); i += 10 {
		if err := be.SetCurrentKey(keys[i]); err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			if err := m.Put(fmt.Sprintf("category-%d", j), int64(j)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSnapshot snapshots 100k int64 values and 10k maps of 10 entries
// with TTL; MB/s counts the bytes of the data file.
func BenchmarkSnapshot(b *testing.B) {
	be, _, keys := benchValueState(b)
	clock := state.NewManualClock(1_700_000_000_000)
	md := state.NewMap("m", serializers.String(), serializers.Int64(), sweepTTL(0))
	benchMaps(b, be, clock, md, keys)
	specs := []*state.Spec{be.states[0].spec, md.Spec()}
	meta := statetest.NewMetadata(statetest.NewOperator("op", 1, 128, serializers.String(), specs, nil), clock.Now())
	snapshot := func() int64 {
		ctx := context.Background()
		st := &discardStaging{}
		w, err := snapshotfmt.NewWriter(st, meta, snapshotfmt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		f, err := w.CreateDataFile(ctx, "data")
		if err != nil {
			b.Fatal(err)
		}
		if err := be.Snapshot(ctx, f, 0, &meta.Operators[0], clock.Now()); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		return st.n
	}
	b.SetBytes(snapshot())
	b.ReportAllocs()
	for b.Loop() {
		snapshot()
	}
}

// BenchmarkRestore restores 100k int64 values and 10k maps of 10 entries
// into a new backend and flushes it, so that the state ends in sstables
// whichever way the restore wrote it; MB/s counts the savepoint's data
// bytes.
func BenchmarkRestore(b *testing.B) {
	be, _, keys := benchValueState(b)
	md := state.NewMap("m", serializers.String(), serializers.Int64())
	benchMaps(b, be, nil, md, keys)
	specs := []*state.Spec{be.states[0].spec, md.Spec()}
	meta := statetest.NewMetadata(statetest.NewOperator("op", 1, 128, serializers.String(), specs, nil), 0)
	sp := statetest.WriteSavepoint(b, b.TempDir()+"/sp", meta, 0, be)
	var bytes int64
	for _, ref := range meta.Refs(0) {
		segs, err := sp.Segments(context.Background(), ref, keygroup.All(128))
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range segs {
			bytes += int64(s.Bytes)
		}
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	for b.Loop() {
		r, err := New(Options{Dir: b.TempDir(), MaxParallelism: 128, KeyGroups: keygroup.All(128)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := state.GetValue(r, nil, state.NewValue("v", serializers.Int64())); err != nil {
			b.Fatal(err)
		}
		if _, err := state.GetMap(r, nil, state.NewMap("m", serializers.String(), serializers.Int64())); err != nil {
			b.Fatal(err)
		}
		if err := r.Restore(context.Background(), sp, 0, state.RestoreOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := r.db.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
