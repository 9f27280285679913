package flinkfmt

import (
	"context"

	"github.com/stateproc/stateproc/keygroup"
)

// Span is where one key group of one subtask's handle lies: what an index
// of the savepoint would say about it.
type Span struct {
	KeyGroup int
	// Subtask is the subtask's index; Layout the layout of its handle.
	Subtask int
	Layout  Layout
	// File names the stream as errors do (a file of the savepoint
	// directory, or an inline handle of the metadata); Offset and Length
	// are where in it the key group's bytes lie, as stored (compressed).
	// A native RocksDB handle keeps a key group in no one place: File is
	// empty and Length 0.
	File           string
	Offset, Length int64
}

// Spans lists, in ascending key-group order, the key groups of the
// operator's handles that hold bytes, raw keyed timers included. Changelog
// handles, which are not read, have none.
func (k *Keyed) Spans(ctx context.Context) ([]Span, error) {
	it := &EntryIterator{ctx: ctx, k: k, kgs: keygroup.All(k.Operator.MaxParallelism)}
	var out []Span
	for _, st := range it.plan() {
		sk := k.subtasks[st.sub]
		s := Span{KeyGroup: st.kg, Subtask: sk.index, Layout: sk.layout}
		switch {
		case st.idx < 0:
			continue
		case sk.layout == LayoutRocksDBNative:
		default:
			off := sk.handle.Offsets[st.idx]
			if off == 0 && sk.layout != LayoutRawTimers {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			s.File, s.Offset, s.Length = sk.file, off, k.r.spanEnd(sk.handle, off, sk)-off
		}
		out = append(out, s)
	}
	return out, nil
}
