package flinkrewrite

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/storage"
)

// Converted: the operator's keyed state was in a backend's own layout
// (native RocksDB, heap) and is written in the canonical one.
const Converted Action = "converted"

// ConvertedOperator says what a conversion does to one operator.
type ConvertedOperator struct {
	ID     string `json:"id"`
	UID    string `json:"uid,omitempty"`
	Name   string `json:"name,omitempty"`
	Keyed  bool   `json:"keyed"`
	Action Action `json:"action"`
	// Layout is the layout of the input's managed keyed state ("" without
	// any), the first one where subtasks differ.
	Layout flinkfmt.Layout `json:"layout,omitempty"`
	// Subtasks counts the subtasks whose keyed state is converted.
	Subtasks int `json:"subtasks"`
	// KeyedBytes is the size of the converted keyed state in the input
	// (for a native handle: its tables, OPTIONS, MANIFEST and CURRENT).
	KeyedBytes int64 `json:"keyed_bytes"`
	// Pairs counts the key/value pairs written (a RocksDB key each: a
	// value, a whole list, a map entry, a timer), none in a dry run.
	Pairs uint64 `json:"pairs"`
}

// ConvertReport lists every operator of the savepoint.
type ConvertReport struct {
	DryRun    bool                `json:"dry_run"`
	Operators []ConvertedOperator `json:"operators"`
}

// convertPlan is one operator whose keyed state is converted: the parts
// (indexes into Keyed.Parts) in a backend's own layout.
type convertPlan struct {
	op    *flinkfmt.Operator
	keyed *flinkfmt.Keyed
	parts []int
}

// NeedsConversion reports whether some operator's managed keyed state is
// in a layout the other rewrites do not read (native RocksDB), so that
// they run on Convert's output.
func NeedsConversion(ctx context.Context, src *flinkfmt.Reader) bool {
	for _, op := range src.Metadata().Operators {
		k, err := src.Keyed(ctx, op)
		if err != nil {
			continue
		}
		for _, p := range k.Parts() {
			if p.Layout == flinkfmt.LayoutRocksDBNative {
				return true
			}
		}
	}
	return false
}

// Convert writes src with every operator's keyed state in the canonical
// layout, which Flink restores on every state backend (from 1.13 on), into
// dst; a nil dst is a dry run, which opens every native handle's tables
// but reads no entries. Native RocksDB handles (savepoints and incremental
// checkpoints) become key-group handles whose streams hold each key
// group's pairs in the order Flink's full snapshot of RocksDB writes them
// (states by id, keys in byte order; timers from their column families),
// copied as RocksDB holds them after the merge of its tables; heap handles
// keep the heap's order. The keyed-stream header of each subtask is
// carried over as bytes. Everything else (canonical keyed state, operator
// and broadcast state, raw keyed state, coordinator state) is copied.
// A savepoint with nothing to convert, and the changelog layout, are
// refused.
func Convert(ctx context.Context, src *flinkfmt.Reader, dst storage.Target, opts Options) (*ConvertReport, error) {
	inputMeta, err := checkWritable(src.Metadata())
	if err != nil {
		return nil, err
	}
	m := src.Metadata()
	plans := make([]*convertPlan, len(m.Operators))
	rep := &ConvertReport{DryRun: dst == nil}
	var total int64
	for i, op := range m.Operators {
		r := ConvertedOperator{ID: op.ID.String(), UID: op.UID, Name: op.Name, Keyed: hasKeyedState(op), Action: Unchanged}
		p, err := planConvert(ctx, src, op, &r)
		if err != nil {
			return nil, err
		}
		plans[i] = p
		if p == nil {
			total += fileBytes(op, true)
		} else {
			total += fileBytes(op, false) + r.KeyedBytes
		}
		rep.Operators = append(rep.Operators, r)
	}
	converting := false
	for _, p := range plans {
		converting = converting || p != nil
	}
	if !converting {
		return nil, rewrite.Refusef("no operator's keyed state is in a backend's own layout (native RocksDB or heap): the savepoint is canonical already, and every Flink backend restores it as it is")
	}
	if dst == nil {
		// What would fail while writing: the tables, their properties and
		// column families, checked by opening each native handle.
		for _, p := range plans {
			if p == nil {
				continue
			}
			for _, pi := range p.parts {
				if p.keyed.Parts()[pi].Layout != flinkfmt.LayoutRocksDBNative {
					continue
				}
				np, err := p.keyed.OpenNative(ctx, pi)
				if err != nil {
					return nil, err
				}
				np.Close()
			}
		}
		return rep, nil
	}
	o, err := newOutput(ctx, src, inputMeta, dst, "convert to the canonical layout", opts, rewrite.NewMeter(total, opts.Progress))
	if err != nil {
		return nil, err
	}
	meta := outputMetadata(m)
	for i, op := range m.Operators {
		p := plans[i]
		if p == nil {
			kept, err := o.keepOperator(op)
			if err != nil {
				return nil, err
			}
			meta.Operators = append(meta.Operators, kept)
			continue
		}
		out, n, err := convertOperator(ctx, o, p, opts)
		if err != nil {
			return nil, err
		}
		rep.Operators[i].Pairs = n
		meta.Operators = append(meta.Operators, out)
	}
	if err := o.finish(meta); err != nil {
		return nil, err
	}
	return rep, nil
}

// planConvert decides what happens to op, filling in r: nil when it is
// copied as it is.
func planConvert(ctx context.Context, src *flinkfmt.Reader, op *flinkfmt.Operator, r *ConvertedOperator) (*convertPlan, error) {
	k, err := src.Keyed(ctx, op)
	switch {
	case errors.Is(err, flinkfmt.ErrNotKeyed):
		return nil, nil
	case errors.Is(err, flinkfmt.ErrUnsupported):
		return nil, refused(fmt.Errorf("operator %s: %w", describeOperator(op), err))
	case err != nil:
		return nil, err
	}
	p := &convertPlan{op: op, keyed: k}
	parts := k.Parts()
	for _, pi := range managedParts(k) {
		part := parts[pi]
		if r.Layout == "" {
			r.Layout = part.Layout
		}
		switch part.Layout {
		case flinkfmt.LayoutCanonical:
			continue
		case flinkfmt.LayoutRocksDBNative, flinkfmt.LayoutHeap:
		default:
			return nil, refused(fmt.Errorf("%w: operator %s: subtask %d's keyed state is in the %s layout, whose changes only the job can apply: restore it in Flink and take a canonical savepoint",
				flinkfmt.ErrUnsupported, describeOperator(op), part.Subtask, part.Layout))
		}
		p.parts = append(p.parts, pi)
		r.Subtasks++
		r.KeyedBytes += part.Handle.Size()
	}
	if len(p.parts) == 0 {
		return nil, nil
	}
	r.Action = Converted
	return p, nil
}

// convertOperator writes the converted parts of one operator, one stream
// each, and returns the operator as the output's metadata holds it.
func convertOperator(ctx context.Context, o *output, p *convertPlan, opts Options) (*flinkfmt.Operator, uint64, error) {
	k := p.keyed
	handles := make([]*flinkfmt.KeyedHandle, len(p.parts))
	var pairs atomic.Uint64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.workers())
	for i, pi := range p.parts {
		g.Go(func() error {
			h, n, err := convertPart(gctx, o, k, pi)
			handles[i] = h
			pairs.Add(n)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, 0, err
	}
	bySubtask := map[int]*flinkfmt.KeyedHandle{}
	parts := k.Parts()
	for i, pi := range p.parts {
		bySubtask[parts[pi].Subtask] = handles[i]
	}
	out := *p.op
	var err error
	if out.Coordinator, err = o.keepStream(p.op.Coordinator); err != nil {
		return nil, 0, err
	}
	out.Subtasks = make([]flinkfmt.Subtask, len(p.op.Subtasks))
	for i, st := range p.op.Subtasks {
		h, converted := bySubtask[st.Index]
		if out.Subtasks[i], err = o.keepSubtask(st, !converted); err != nil {
			return nil, 0, err
		}
		if converted {
			out.Subtasks[i].ManagedKeyed = h
		}
	}
	return &out, pairs.Load(), nil
}

// convertPart writes part pi of k as one canonical stream under the
// part's own header, over the part's key groups, and returns its handle
// (of the savepoint kind, the one the heap backend restores the canonical
// layout from) and the pairs written.
func convertPart(ctx context.Context, o *output, k *flinkfmt.Keyed, pi int) (*flinkfmt.KeyedHandle, uint64, error) {
	part := k.Parts()[pi]
	maxP := k.Operator.MaxParallelism
	kgs := part.Handle.KeyGroups.Intersect(keygroup.All(maxP))
	header, err := k.CanonicalHeader([]int{pi})
	if err != nil {
		return nil, 0, err
	}
	sw := o.stream(fmt.Sprintf("converted keyed state of operator %s, subtask %d, key groups %v", k.Operator.ID, part.Subtask, kgs))
	defer sw.Close()
	cw, err := flinkfmt.NewCanonicalWriter(sw, header, maxP, kgs)
	if err != nil {
		return nil, 0, err
	}
	perKG := part.Handle.Size() / int64(max(1, kgs.Len()))
	var n uint64
	switch part.Layout {
	case flinkfmt.LayoutRocksDBNative:
		np, err := k.OpenNative(ctx, pi)
		if err != nil {
			return nil, 0, err
		}
		defer np.Close()
		for kg := kgs.Start; kg <= kgs.End; kg++ {
			err := np.KeyGroup(kg, func(state int, key, value []byte) error {
				n++
				return cw.Add(kg, header.IDs[state], key, value)
			})
			if err != nil {
				return nil, 0, err
			}
			o.meter.Add(perKG)
		}
	default:
		enc := k.PairEncoder()
		var entries []flinkfmt.Entry
		for kg := kgs.Start; kg <= kgs.End; kg++ {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			if entries, err = readKeyGroup(ctx, k, part, pi, kg, entries[:0]); err != nil {
				return nil, 0, err
			}
			err := enc.Each(entries, func(pr flinkfmt.Pair) error {
				n++
				return cw.Add(kg, header.IDs[pr.State], pr.Key, pr.Value)
			})
			if err != nil {
				return nil, 0, err
			}
			o.meter.Add(perKG)
		}
	}
	offsets, err := cw.Finish()
	if err != nil {
		return nil, 0, err
	}
	s, err := sw.Finish()
	if err != nil {
		return nil, 0, err
	}
	return &flinkfmt.KeyedHandle{Kind: flinkfmt.KeyedSavepointKeyGroups, KeyGroups: kgs, Offsets: offsets, Stream: s}, n, nil
}
