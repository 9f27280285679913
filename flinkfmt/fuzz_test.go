package flinkfmt

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
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
