package flinkfmt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
)

// OperatorState is one named operator (non-keyed) state of an operator:
// a list state (split or union) or a broadcast map.
type OperatorState struct {
	Name string
	Mode Distribution
	// Element is a list state's element serializer; Key and Value a
	// broadcast state's.
	Element, Key, Value *typeser.Serializer
	// Subtasks holds a list state's serialized elements per subtask that
	// has the state, in subtask order.
	Subtasks []OperatorSubtask
	// Entries are a broadcast state's entries, from the first subtask that
	// holds them (every subtask holds the same map).
	Entries []BroadcastEntry
}

// OperatorSubtask is one subtask's elements of a list state.
type OperatorSubtask struct {
	Index    int
	Elements [][]byte
	// Splits holds, for a source reader's SourceReaderState, the decoded
	// splits, one per element.
	Splits []SourceSplit
}

// BroadcastEntry is one serialized entry of a broadcast state.
type BroadcastEntry struct {
	Key, Value []byte
}

// Operator-state stream header versions this reader takes
// (OperatorBackendSerializationProxy): 2 for Flink 1.3 and 1.4, 3 for 1.5,
// 4 for 1.6 (these with Java-serialized serializers), 5 up to Flink 1.17,
// 6 from 1.18.
const (
	oldestOperatorProxyVersion = 2
	minOperatorProxyVersion    = 5
	maxOperatorProxyVersion    = 6
)

// OperatorStates reads the managed operator and broadcast state of every
// subtask of op. Elements that cannot be walked are reported as warnings
// and left out.
func (r *Reader) OperatorStates(ctx context.Context, op *Operator) ([]*OperatorState, []Warning, error) {
	var out []*OperatorState
	var warns []Warning
	byName := map[string]*OperatorState{}
	for _, st := range op.Subtasks {
		h := st.ManagedOperator
		if h == nil || len(h.States) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		b, name, err := r.streamBytes(ctx, h.Stream, 0, -1)
		if err != nil {
			return nil, nil, at(name, op.ID.String(), -1, -1, err)
		}
		metas, compressed, err := parseOperatorHeader(wire.New(b, 0))
		if err != nil {
			return nil, nil, at(name, op.ID.String(), -1, -1, err)
		}
		offsets := allOffsets(h)
		for _, s := range h.States {
			m, ok := metas[s.Name]
			if !ok {
				return nil, nil, at(name, op.ID.String(), -1, -1, corruptf("operator state %q is not in the stream header", s.Name))
			}
			os := byName[s.Name]
			if os == nil {
				os = &OperatorState{Name: s.Name, Mode: s.Mode, Element: m.Serializers[valueSerializerKey], Key: m.Serializers[keySerializerKey], Value: m.Serializers[valueSerializerKey]}
				if s.Mode != Broadcast {
					os.Key, os.Value = nil, nil
				} else {
					os.Element = nil
				}
				byName[s.Name] = os
				out = append(out, os)
			} else if os.Mode != s.Mode {
				// Its serializers were taken for the other mode.
				return nil, nil, at(name, op.ID.String(), -1, -1, corruptf("operator state %q has mode %s in one subtask and %s in another", s.Name, os.Mode, s.Mode))
			}
			w, err := readOperatorState(b, compressed, name, st.Index, s, os, offsets, r.opts.MaxKeyGroupBytes)
			if err != nil {
				return nil, nil, at(name, op.ID.String(), -1, -1, err)
			}
			warns = append(warns, w...)
		}
	}
	return out, warns, nil
}

func parseOperatorHeader(r *wire.Buf) (map[string]*StateMeta, bool, error) {
	v := int(r.I32())
	if err := r.Err(); err != nil {
		return nil, false, corrupt(err)
	}
	if v < 1 || v > maxOperatorProxyVersion {
		return nil, false, corruptf("operator state header version %d", v)
	}
	if v < oldestOperatorProxyVersion {
		return nil, false, unsupportedf("operator state header version %d (Flink 1.2)", v)
	}
	compressed := false
	if v >= 6 {
		compressed = r.Bool()
	}
	metas := map[string]*StateMeta{}
	for _, want := range []BackendStateType{OperatorList, BroadcastMap} {
		if want == BroadcastMap && v < 3 {
			break
		}
		n := int(r.U16())
		for i := 0; i < n; i++ {
			var m *StateMeta
			var err error
			switch {
			case v >= minOperatorProxyVersion:
				m, err = parseStateMeta(r, false)
			case v == 4:
				m, err = parseStateMetaV5(r)
			default:
				m, err = parseOperatorMetaV2(r)
			}
			if err != nil {
				return nil, false, err
			}
			if m.Backend != want {
				return nil, false, corruptf("operator state %q has backend type %s, want %s", m.Name, m.Backend, want)
			}
			if m.Serializers[valueSerializerKey] == nil || want == BroadcastMap && m.Serializers[keySerializerKey] == nil {
				return nil, false, corruptf("operator state %q lacks a serializer", m.Name)
			}
			metas[m.Name] = m
		}
	}
	if err := r.Err(); err != nil {
		return nil, false, corrupt(err)
	}
	return metas, compressed, nil
}

func allOffsets(h *OperatorStateHandle) []int64 {
	var offs []int64
	for _, s := range h.States {
		offs = append(offs, s.Offsets...)
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs
}

// nextOffset is the least offset greater than off, or end.
func nextOffset(offs []int64, off int64, end int64) int64 {
	i := sort.Search(len(offs), func(i int) bool { return offs[i] > off })
	if i < len(offs) {
		return offs[i]
	}
	return end
}

// segment returns the bytes of the element or map at off: up to the next
// offset, decompressed when the stream is compressed. Then one Snappy
// stream follows the header and every offset starts a chunk of it, so the
// chunks from off on decode by themselves after a stream identifier.
func segment(b []byte, compressed bool, off int64, offs []int64, limit int64) ([]byte, error) {
	if off < 0 || off > int64(len(b)) {
		return nil, corruptf("offset %d past the end of %d bytes", off, len(b))
	}
	end := nextOffset(offs, off, int64(len(b)))
	if end > int64(len(b)) {
		return nil, corruptf("offset %d past the end of %d bytes", end, len(b))
	}
	seg := b[off:end]
	if !compressed {
		return seg, nil
	}
	if !bytes.HasPrefix(seg, snappyMagic) {
		seg = append(append(make([]byte, 0, len(snappyMagic)+len(seg)), snappyMagic...), seg...)
	}
	return unsnappy(seg, limit)
}

func readOperatorState(b []byte, compressed bool, file string, subtask int, s OperatorStateOffsets, os *OperatorState, offs []int64, limit int64) ([]Warning, error) {
	var warns []Warning
	if s.Mode == Broadcast {
		if len(s.Offsets) != 1 {
			return nil, corruptf("broadcast state %q has %d offsets, want 1", s.Name, len(s.Offsets))
		}
		if os.Entries != nil {
			return nil, nil
		}
		seg, err := segment(b, compressed, s.Offsets[0], offs, limit)
		if err != nil {
			return nil, fmt.Errorf("broadcast state %q: %w", s.Name, err)
		}
		r := wire.New(seg, s.Offsets[0])
		n := r.Count("broadcast entries", 1)
		entries := make([]BroadcastEntry, 0, n)
		for i := 0; i < n && r.Err() == nil; i++ {
			start := r.Pos()
			if _, err := os.Key.Read(r); err != nil {
				return append(warns, opaqueWarning(file, s.Name, os.Key, start, len(r.Bytes()), err)), partial(err)
			}
			mid := r.Pos()
			if _, err := os.Value.Read(r); err != nil {
				return append(warns, opaqueWarning(file, s.Name, os.Value, mid, len(r.Bytes()), err)), partial(err)
			}
			entries = append(entries, BroadcastEntry{Key: seg[start:mid], Value: seg[mid:r.Pos()]})
		}
		if err := r.Err(); err != nil {
			return nil, corrupt(err)
		}
		os.Entries = entries
		return nil, nil
	}
	sub := OperatorSubtask{Index: subtask}
	for _, off := range s.Offsets {
		seg, err := segment(b, compressed, off, offs, limit)
		if err != nil {
			return nil, fmt.Errorf("operator state %q element: %w", s.Name, err)
		}
		r := wire.New(seg, off)
		if _, err := os.Element.Read(r); err != nil {
			if !errors.Is(err, typeser.ErrUnframed) {
				return nil, corrupt(fmt.Errorf("operator state %q element at offset %d: %w", s.Name, off, err))
			}
			// The next offset frames the element.
			sub.Elements = append(sub.Elements, seg)
			continue
		}
		sub.Elements = append(sub.Elements, seg[:r.Pos()])
	}
	if s.Name == SourceReaderState && os.Element.Type.Kind == typeser.KindBytes {
		for _, e := range sub.Elements {
			v, err := os.Element.Decode(e)
			if err != nil {
				return nil, corrupt(fmt.Errorf("source split: %w", err))
			}
			split, err := DecodeSourceSplit(v.([]byte))
			if err != nil {
				return nil, err
			}
			sub.Splits = append(sub.Splits, split)
		}
	}
	os.Subtasks = append(os.Subtasks, sub)
	return warns, nil
}

// partial turns an unframed value into a warning and other errors into
// structural ones.
func partial(err error) error {
	if errors.Is(err, typeser.ErrUnframed) {
		return nil
	}
	return corrupt(err)
}

func opaqueWarning(file, state string, s *typeser.Serializer, start, end int, err error) Warning {
	w := Warning{KeyGroup: -1, File: file, Offset: int64(start), Length: int64(end - start), State: state, Serializer: s.Class, Message: err.Error()}
	var ue *typeser.UnframedError
	if errors.As(err, &ue) {
		w.Serializer, w.Class = ue.Serializer, ue.Class
	}
	return w
}
