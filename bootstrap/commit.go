package bootstrap

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/internal/extsort"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Summary says what a bootstrap wrote, or in a dry run would write.
type Summary struct {
	ID        uint64
	CreatedAt int64
	// States lists every state of the job, in the order of the metadata.
	States []StateSummary
	// Rows counts the entries added, which are the savepoint's entries.
	Rows int64
	// SpillBytes is what the keyed entries took in spill files, where
	// they wait to be sorted one bucket of key groups at a time.
	SpillBytes int64
	// Spilled is the number of sorted runs the sort wrote: 0 when every
	// bucket fitted Options.Memory.
	Spilled int
	DryRun  bool
}

// StateSummary says what one state received.
type StateSummary struct {
	Operator string
	State    string
	// Kind is the keyed state's kind, or timers, operator or broadcast.
	Kind string
	// Files counts the dataset files Load read for it.
	Files int64
	Rows  int64
}

// Commit sorts the entries, checks that no entry was given twice, writes
// the savepoint and publishes it at Options.Out (in a dry run it writes
// nothing). Bad rows found while entries were added, or duplicates found
// here, fail it with a *BadRows error, and nothing is published.
func (b *Builder) Commit(ctx context.Context) (*Summary, error) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return nil, errors.New("bootstrap: Commit after Commit or Close")
	}
	b.done = true
	b.mu.Unlock()
	for _, t := range b.order() {
		switch {
		case t.opState != nil:
			b.finishOperatorState(t)
		case t.bcast != nil:
			b.finishBroadcast(t)
		}
	}
	spills, spillBytes, err := b.spill.finish()
	if err != nil {
		return nil, err
	}
	kw := &keyedWriter{b: b, fop: -1, made: map[[2]int]bool{}}
	if !b.bad.any() {
		kw.out = b.out
	}
	srt := extsort.NewSorter(b.opts.Memory, b.spillPath(), "sort")
	if err := kw.run(ctx, srt, spills); err != nil {
		return nil, err
	}
	if err := b.bad.err(); err != nil {
		return nil, err
	}
	if b.out != nil {
		if err := b.out.Commit(ctx); err != nil {
			return nil, err
		}
	}
	s := &Summary{ID: b.meta.ID, CreatedAt: b.meta.CreatedAt, SpillBytes: spillBytes, Spilled: srt.Runs(), DryRun: b.opts.DryRun}
	for _, t := range b.order() {
		n := t.rows.Load()
		s.States = append(s.States, StateSummary{Operator: t.uid, State: t.name, Kind: t.kind, Files: t.files.Load(), Rows: n})
		s.Rows += n
	}
	return s, nil
}

// order lists the targets in the order of the metadata: per operator its
// keyed states, timer services, operator states and broadcast states.
func (b *Builder) order() []*target {
	var out []*target
	for op := range b.meta.Operators {
		for _, t := range b.targets {
			if t.op == op {
				out = append(out, t)
			}
		}
	}
	rank := func(t *target) int {
		switch {
		case t.opState != nil:
			return 1 << 20
		case t.bcast != nil:
			return 2 << 20
		}
		return t.ref
	}
	slices.SortStableFunc(out, func(x, y *target) int {
		return cmp.Or(cmp.Compare(x.op, y.op), cmp.Compare(rank(x), rank(y)), cmp.Compare(x.name, y.name))
	})
	return out
}

// finishOperatorState puts the elements of an operator state in order,
// subtask by subtask, and into the lists of the job's subtasks.
func (b *Builder) finishOperatorState(t *target) {
	slices.SortFunc(t.elements, func(x, y element) int {
		return cmp.Or(cmp.Compare(x.subtask, y.subtask), cmp.Compare(x.index, y.index), cmp.Compare(x.source, y.source), cmp.Compare(x.row, y.row))
	})
	p := t.operator.Parallelism
	for i, e := range t.elements {
		if i > 0 && e.index != noIndex {
			if prev := t.elements[i-1]; prev.subtask == e.subtask && prev.index == e.index {
				b.bad.add(&RowError{Source: b.sourceName(e.source), Row: int64(e.row), Column: "index",
					Err: fmt.Errorf("a second element at index %d of subtask %d: %s row %d has the same", e.index, e.subtask, b.sourceName(prev.source), prev.row)})
				continue
			}
		}
		s := e.subtask % p
		t.opState.Subtasks[s] = append(t.opState.Subtasks[s], e.value)
	}
	t.elements = nil
}

// finishBroadcast sorts a broadcast state's entries by key.
func (b *Builder) finishBroadcast(t *target) {
	slices.SortFunc(t.entries, func(x, y bentry) int {
		return cmp.Or(bytes.Compare(x.key, y.key), cmp.Compare(x.source, y.source), cmp.Compare(x.row, y.row))
	})
	for i, e := range t.entries {
		if i > 0 && bytes.Equal(t.entries[i-1].key, e.key) {
			prev := t.entries[i-1]
			b.bad.add(&RowError{Source: b.sourceName(e.source), Row: int64(e.row), Column: "key",
				Err: fmt.Errorf("a second value for key %s: %s row %d has the same key", t.describeKey(e.key), b.sourceName(prev.source), prev.row)})
			continue
		}
		t.bcast.Entries = append(t.bcast.Entries, savepoint.BroadcastEntry{Key: e.key, Value: e.value})
	}
	t.entries = nil
}

// describeKey renders a key's bytes as its JSON value, for messages.
func (t *target) describeKey(key []byte) string {
	if t.restore() == nil && t.key != nil {
		if v, err := t.key.DecodeAny(key); err == nil {
			if js, err := json.Marshal(jsonvalue.Value(v)); err == nil {
				return truncate(string(js))
			}
		}
	}
	return fmt.Sprintf("%x", key)
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// keyedWriter writes the sorted records into the data files of the
// engine's layout, one per subtask of every keyed operator, and reports
// every entry given twice. With out nil it only looks for duplicates.
type keyedWriter struct {
	b    *Builder
	out  *rewrite.Output
	f    *rewrite.DataFile
	fop  int
	fsub int
	seg  *rewrite.SegmentWriter
	skg  int
	sref int
	made map[[2]int]bool
	e    savepoint.Entry
}

func (kw *keyedWriter) run(ctx context.Context, srt *extsort.Sorter, spills [][]extsort.Spill) (err error) {
	defer func() {
		if cerr := kw.closeFile(); err == nil {
			err = cerr
		}
	}()
	b := kw.b
	var cur entry
	var prev []byte
	var prevClass uint32
	var prevSource, prevRow uint64
	for bk, op := range b.spill.ops {
		files := make([]extsort.Spill, 0, len(spills))
		for _, w := range spills {
			files = append(files, w[bk])
		}
		have := false
		err := srt.Sort(ctx, files, func(cls uint32, key, value []byte) error {
			ref := int(cls & 0xFFFF)
			if ref >= len(b.shapes[op]) || int(cls>>16) >= b.meta.Operators[op].MaxParallelism {
				return errDamaged
			}
			sh := b.shapes[op][ref]
			if err := decodeRecord(op, sh, cls, key, value, &cur); err != nil {
				return err
			}
			if have && cls == prevClass && sameEntry(sh, prev, &cur) {
				b.duplicate(&cur, prevSource, prevRow)
				kw.out = nil
				return nil
			}
			prev = append(prev[:0], cur.identity...)
			prevClass, prevSource, prevRow, have = cls, cur.source, cur.row, true
			if kw.out == nil {
				return nil
			}
			return kw.add(ctx, &cur)
		})
		extsort.Release(files)
		if err != nil {
			return err
		}
	}
	if kw.out == nil {
		return nil
	}
	if err := kw.closeFile(); err != nil {
		return err
	}
	// The engine writes a data file for every subtask of a keyed operator,
	// whatever it holds.
	for op := range b.meta.Operators {
		o := &b.meta.Operators[op]
		if !o.Keyed() {
			continue
		}
		for sub := range o.Parallelism {
			if err := kw.openFile(ctx, op, sub); err != nil {
				return err
			}
			if err := kw.closeFile(); err != nil {
				return err
			}
		}
	}
	return nil
}

// duplicate reports the entry e, which the one from row prevRow of source
// prevSource already gave.
func (b *Builder) duplicate(e *entry, prevSource, prevRow uint64) {
	t := b.refTarget(e.op, e.ref)
	key := t.describeKey(e.key)
	var column, what string
	switch {
	case t.shape.timer:
		column, what = "timestamp", fmt.Sprintf("a second timer at %s for key %s", jsonvalue.Time(e.time), key)
	case t.shape.isMap:
		column, what = "map_key", fmt.Sprintf("a second entry for map key %x of key %s", e.mk, key)
		if t.restore() == nil {
			if v, err := t.mapKey.DecodeAny(e.mk); err == nil {
				if js, err := json.Marshal(jsonvalue.Value(v)); err == nil {
					what = fmt.Sprintf("a second entry for map key %s of key %s", truncate(string(js)), key)
				}
			}
		}
	case t.shape.isList:
		column, what = "index", fmt.Sprintf("a second element at index %d for key %s", e.index-1, key)
	default:
		column, what = "key", fmt.Sprintf("a second value for key %s", key)
	}
	if t.keyed != nil && t.keyed.Namespace.Kind != serializers.KindVoid || t.timers != nil && t.timers.Namespace.Kind != serializers.KindVoid {
		what += fmt.Sprintf(" in namespace %x", e.ns)
	}
	b.bad.add(&RowError{Source: b.sourceName(e.source), Row: int64(e.row), Column: column,
		Err: fmt.Errorf("%s: %s row %d has the same", what, b.sourceName(prevSource), prevRow)})
}

// refTarget is the target of ref of operator op.
func (b *Builder) refTarget(op, ref int) *target {
	for _, t := range b.targets {
		if t.op == op && (t.keyed != nil || t.timers != nil) && t.ref == ref {
			return t
		}
	}
	return nil
}

func (kw *keyedWriter) add(ctx context.Context, e *entry) error {
	b := kw.b
	o := &b.meta.Operators[e.op]
	sub := keygroup.Subtask(e.kg, o.Parallelism, o.MaxParallelism)
	if e.op != kw.fop || sub != kw.fsub {
		if err := kw.closeFile(); err != nil {
			return err
		}
		if err := kw.openFile(ctx, e.op, sub); err != nil {
			return err
		}
	}
	if kw.seg == nil || e.kg != kw.skg || e.ref != kw.sref {
		if err := kw.closeSegment(); err != nil {
			return err
		}
		var err error
		if kw.seg, err = kw.f.Segment(b.refs[e.op][e.ref], e.kg); err != nil {
			return err
		}
		kw.skg, kw.sref = e.kg, e.ref
	}
	kw.e = savepoint.Entry{KeyGroup: e.kg, Key: e.key, Namespace: e.ns, MapKey: e.mk, Timestamp: e.time}
	if !b.shapes[e.op][e.ref].timer {
		kw.e.Value = e.value
	}
	if err := kw.seg.Add(&kw.e); err != nil {
		return fmt.Errorf("bootstrap: %s row %d: %w", b.sourceName(e.source), e.row, err)
	}
	return nil
}

// openFile opens the data file of subtask sub of operator op, unless it
// was written already.
func (kw *keyedWriter) openFile(ctx context.Context, op, sub int) error {
	kw.fop, kw.fsub = op, sub
	if kw.made[[2]int{op, sub}] {
		return nil
	}
	kw.made[[2]int{op, sub}] = true
	var err error
	kw.f, err = kw.out.CreateFile(ctx, rewrite.EngineFileName(op, sub))
	return err
}

func (kw *keyedWriter) closeSegment() error {
	if kw.seg == nil {
		return nil
	}
	err := kw.seg.Close()
	kw.seg = nil
	return err
}

func (kw *keyedWriter) closeFile() error {
	err := kw.closeSegment()
	if kw.f != nil {
		if cerr := kw.f.Close(); err == nil {
			err = cerr
		}
		kw.f = nil
	}
	return err
}
