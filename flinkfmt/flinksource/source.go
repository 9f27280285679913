package flinksource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Source is a Flink savepoint or checkpoint as a savepoint.Source.
type Source struct {
	r      *flinkfmt.Reader
	meta   *savepoint.Metadata
	layout savepoint.Layout
	// ops holds, per operator of meta, what reading its keyed state takes.
	ops []*operator

	mu       sync.Mutex
	warnings []savepoint.Warning
	warned   map[savepoint.Warning]bool
}

// operator is one operator's keyed state as flinkfmt reads it.
type operator struct {
	uid   string
	keyed *flinkfmt.Keyed // nil without readable keyed state
	// refs maps a keyed state's index in keyed.States to its ref, and
	// back.
	refs    []savepoint.StateRef
	byRef   map[savepoint.StateRef]int
	mapKind []bool
	spans   []flinkfmt.Span
	// layouts counts the subtask handles by layout, changelog ones too;
	// compressed says some are Snappy-compressed.
	layouts    map[flinkfmt.Layout]int
	compressed bool

	once sync.Once
	segs map[savepoint.StateRef][]savepoint.Segment
	err  error
}

// Open reads the metadata and the keyed-state headers of the Flink
// savepoint or checkpoint in dir.
func Open(ctx context.Context, dir storage.Dir, opts flinkfmt.Options) (*Source, error) {
	r, err := flinkfmt.Open(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	return newSource(ctx, r, false)
}

// OpenCheckpoint reads checkpoint id (the newest when negative) of a job's
// checkpoint directory root, in the layout of Flink's file system
// checkpoint storage (see flinkfmt.OpenCheckpoint).
func OpenCheckpoint(ctx context.Context, root storage.Dir, id int64, opts flinkfmt.Options) (*Source, error) {
	r, err := flinkfmt.OpenCheckpoint(ctx, root, id, opts)
	if err != nil {
		return nil, err
	}
	return newSource(ctx, r, true)
}

func newSource(ctx context.Context, r *flinkfmt.Reader, checkpoint bool) (*Source, error) {
	fm := r.Metadata()
	s := &Source{r: r, warned: map[savepoint.Warning]bool{}}
	m := &savepoint.Metadata{
		ID:   uint64(fm.CheckpointID),
		IDOf: func(uid string) string { return flinkfmt.UIDHash(uid).String() },
	}
	m.Notes = append(m.Notes, "Flink records no creation time: the savepoint's time is taken as the epoch, so give --now where a time matters")
	for _, ms := range fm.Masters {
		m.Notes = append(m.Notes, fmt.Sprintf("master state %q (version %d, %d bytes) of a checkpoint hook: not read", ms.Name, ms.Version, len(ms.Data)))
	}
	for _, w := range fm.Warnings {
		m.Notes = append(m.Notes, "metadata: "+w)
	}
	layouts := map[flinkfmt.Layout]bool{}
	compressed := false
	for _, fop := range fm.Operators {
		op, o, err := s.operator(ctx, len(m.Operators), fop)
		if err != nil {
			return nil, err
		}
		for l, n := range o.layouts {
			if n > 0 {
				layouts[l] = true
			}
		}
		compressed = compressed || o.compressed
		m.Operators = append(m.Operators, op)
		s.ops = append(s.ops, o)
	}
	s.meta = m
	s.layout = layoutOf(fm, checkpoint, layouts, compressed)
	return s, nil
}

// releases names the Flink releases that write each metadata version.
var releases = map[int]string{
	2: "Flink 1.3–1.10", 3: "Flink 1.11–1.15", 4: "Flink 1.16–1.20", 5: "Flink 2.0", 6: "Flink 2.1 and later", 7: "Flink after 2.1",
}

// layoutOrder lists the keyed layouts in the order a layout's details name
// them.
var layoutOrder = []flinkfmt.Layout{flinkfmt.LayoutCanonical, flinkfmt.LayoutHeap, flinkfmt.LayoutRocksDBNative, flinkfmt.LayoutRawTimers, flinkfmt.LayoutChangelog}

func layoutOf(fm *flinkfmt.Metadata, checkpoint bool, layouts map[flinkfmt.Layout]bool, compressed bool) savepoint.Layout {
	name := "Apache Flink savepoint or checkpoint"
	switch {
	case fm.Properties.Type == "SavepointType":
		name = "Apache Flink savepoint"
	case fm.Properties.Type == "CheckpointType", checkpoint:
		name = "Apache Flink checkpoint"
	}
	l := savepoint.Layout{Name: name, Version: uint32(fm.Version), VersionName: "metadata version", Releases: releases[fm.Version],
		Checks: "structure: every handle, header, length and key group (Flink keeps no checksums)", Unsorted: true}
	for _, k := range layoutOrder {
		if layouts[k] {
			l.Details = append(l.Details, string(k))
		}
	}
	if compressed {
		l.Details = append(l.Details, "snappy")
	}
	if f := fm.Properties.Format; f != "" {
		l.Details = append(l.Details, strings.ToLower(f)+" format")
	}
	return l
}

// operator builds the model of one operator, index idx.
func (s *Source) operator(ctx context.Context, idx int, fop *flinkfmt.Operator) (savepoint.Operator, *operator, error) {
	op := savepoint.Operator{
		UID: fop.UID, Name: fop.Name, ID: fop.ID.String(),
		Parallelism: fop.Parallelism, MaxParallelism: fop.MaxParallelism,
	}
	if op.UID == "" {
		op.UID = op.ID
	}
	o := &operator{uid: op.UID, byRef: map[savepoint.StateRef]int{}}
	if fop.Finished {
		op.Notes = append(op.Notes, "finished before the checkpoint: it holds no state")
	}
	if fop.Coordinator != nil {
		op.Notes = append(op.Notes, fmt.Sprintf("operator coordinator state (%s, %d bytes; a source's split enumerator): not read", fop.Coordinator.Kind, fop.Coordinator.Size))
	}
	for _, st := range fop.Subtasks {
		if h := st.RawOperator; h != nil && h.Stream != nil {
			op.Notes = append(op.Notes, fmt.Sprintf("subtask %d: raw operator state of %d bytes, which only the operator's own code reads: not read", st.Index, h.Stream.Size))
		}
		if n := len(st.InputChannels) + len(st.ResultSubpartitions); n > 0 {
			var size int64
			for _, c := range append(slices.Clip(st.InputChannels), st.ResultSubpartitions...) {
				size += c.StateSize
			}
			op.Notes = append(op.Notes, fmt.Sprintf("subtask %d: in-flight data of an unaligned checkpoint (%d channels, %d bytes): records in transit, not state: not read", st.Index, n, size))
		}
		if h := st.ManagedKeyed; flinkfmt.HandleLayout(h) == flinkfmt.LayoutChangelog {
			op.Unread = append(op.Unread, fmt.Sprintf("subtask %d: keyed state in the changelog layout (%s, %d bytes): not readable yet; restore it in Flink and take a savepoint", st.Index, h.Kind, h.Size()))
		}
	}
	k, err := s.r.Keyed(ctx, fop)
	switch {
	case errors.Is(err, flinkfmt.ErrNotKeyed):
	case errors.Is(err, flinkfmt.ErrUnsupported):
		op.Unread = append(op.Unread, "keyed state: "+err.Error())
	case err != nil:
		return op, nil, err
	default:
		o.layouts, o.compressed = k.Layouts, k.Compressed
		if err := s.keyed(ctx, idx, &op, o, k); err != nil {
			return op, nil, err
		}
	}
	states, warns, err := s.r.OperatorStates(ctx, fop)
	switch {
	case errors.Is(err, flinkfmt.ErrUnsupported):
		op.Unread = append(op.Unread, "operator state: "+err.Error())
	case err != nil:
		return op, nil, err
	}
	for _, w := range warns {
		s.warn(op.UID, w)
	}
	for _, st := range states {
		if err := addOperatorState(&op, fop, st); err != nil {
			return op, nil, err
		}
	}
	return op, o, nil
}

// keyed adds the states and timer services of k to op.
func (s *Source) keyed(ctx context.Context, idx int, op *savepoint.Operator, o *operator, k *flinkfmt.Keyed) error {
	op.Notes = append(op.Notes, k.Notes...)
	if k.Key == nil {
		return nil
	}
	o.keyed = k
	op.Key, op.KeyHash = snapshot(newSerializer(k.Key)), keygroup.FlinkHashCode
	if notes := opaqueNotes(k.Key.Type); len(notes) > 0 {
		op.Notes = append(op.Notes, "keys: "+strings.Join(notes, "; "))
	}
	for i, m := range k.States {
		var ref savepoint.StateRef
		switch m.Kind {
		case flinkfmt.Timers:
			ref = savepoint.StateRef{Operator: idx, State: len(op.Timers), Timer: true}
			op.Timers = append(op.Timers, savepoint.TimerService{Name: m.Name, Namespace: snapshot(newSerializer(m.Value.Args[1]))})
		default:
			kind, ok := m.Kind.SavepointKind()
			if !ok {
				// Folding state, removed from Flink in 1.14, holds one
				// accumulator per key and namespace, as aggregating
				// state does.
				kind = savepoint.Aggregating
			}
			ref = savepoint.StateRef{Operator: idx, State: len(op.States)}
			ks := savepoint.KeyedState{Name: m.Name, Kind: kind, Namespace: snapshot(newSerializer(m.Namespace))}
			value := newSerializer(m.Stored)
			if kind == savepoint.Map {
				ks.MapKey = snapshot(newSerializer(m.MapKey))
				value = nullable(m.Stored)
			}
			ks.Value = snapshot(value)
			if m.Kind == flinkfmt.Folding {
				ks.Notes = append(ks.Notes, "folding state (removed in Flink 1.14), shown as aggregating state: one accumulator per key and namespace")
			}
			if m.TTL {
				ks.Notes = append(ks.Notes, "state with TTL: each value holds Flink's last-access time; Flink does not record the TTL itself, so no value is known to be expired")
			}
			ks.Notes = append(ks.Notes, opaqueNotes(m.Stored.Type)...)
			if m.MapKey != nil {
				ks.Notes = append(ks.Notes, opaqueNotes(m.MapKey.Type)...)
			}
			op.States = append(op.States, ks)
		}
		o.refs = append(o.refs, ref)
		o.byRef[ref] = i
		o.mapKind = append(o.mapKind, m.Kind == flinkfmt.Map)
	}
	var err error
	if o.spans, err = k.Spans(ctx); err != nil {
		return err
	}
	return nil
}

// opaqueNotes names the classes of t's values that only the job's classes
// decode.
func opaqueNotes(t *typeser.Type) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(t *typeser.Type, depth int)
	walk = func(t *typeser.Type, depth int) {
		if t == nil || depth > typeser.MaxDepth {
			return
		}
		if t.Kind == typeser.KindOpaque && !seen[t.Class] {
			seen[t.Class] = true
			out = append(out, fmt.Sprintf("values of class %s (written by %s) decode where they are of a JDK class whose form is defined (String, the boxed primitives); others are kept as opaque bytes, which only the job's classes decode", t.Class, shortClass(t.Serializer)))
		}
		for _, f := range t.Fields {
			walk(f.Type, depth+1)
		}
		walk(t.Elem, depth+1)
		walk(t.Key, depth+1)
		walk(t.Value, depth+1)
	}
	walk(t, 0)
	return out
}

func shortClass(c string) string {
	if c == "" {
		return "its serializer"
	}
	return c[strings.LastIndexByte(c, '.')+1:]
}

// corruptError is a structural error of the metadata found here rather than
// in flinkfmt: both packages' sentinels, so the commands exit 4 on it.
type corruptError struct{ msg string }

func (e *corruptError) Error() string { return e.msg }

func (e *corruptError) Unwrap() []error { return []error{flinkfmt.ErrCorrupt, savepoint.ErrCorrupt} }

func corruptf(format string, args ...any) error {
	return &corruptError{msg: flinkfmt.ErrCorrupt.Error() + ": " + fmt.Sprintf(format, args...)}
}

// addOperatorState adds one operator list or broadcast state to op.
func addOperatorState(op *savepoint.Operator, fop *flinkfmt.Operator, st *flinkfmt.OperatorState) error {
	if st.Mode == flinkfmt.Broadcast {
		b := savepoint.BroadcastState{Name: st.Name, Key: snapshot(newSerializer(st.Key)), Value: snapshot(newSerializer(st.Value))}
		for _, e := range st.Entries {
			b.Entries = append(b.Entries, savepoint.BroadcastEntry{Key: e.Key, Value: e.Value})
		}
		sort.SliceStable(b.Entries, func(i, j int) bool { return bytes.Compare(b.Entries[i].Key, b.Entries[j].Key) < 0 })
		op.BroadcastStates = append(op.BroadcastStates, b)
		return nil
	}
	dist, ok := st.Mode.SavepointDistribution()
	if !ok {
		return corruptf("operator %s: operator state %q has mode %s", op.UID, st.Name, st.Mode)
	}
	elem := newSerializer(st.Element)
	if st.Name == flinkfmt.SourceReaderState && st.Element.Type.Kind == typeser.KindBytes {
		elem = splitSerializer(st.Element)
	}
	os := savepoint.OperatorState{Name: st.Name, Distribution: dist, Element: snapshot(elem)}
	n := max(fop.Parallelism, len(fop.Subtasks))
	for _, sub := range st.Subtasks {
		if sub.Index < 0 || sub.Index >= n {
			return corruptf("operator %s: operator state %q of subtask %d of %d", op.UID, st.Name, sub.Index, n)
		}
		for len(os.Subtasks) <= sub.Index {
			os.Subtasks = append(os.Subtasks, nil)
		}
		os.Subtasks[sub.Index] = append(os.Subtasks[sub.Index], sub.Elements...)
	}
	op.OperatorStates = append(op.OperatorStates, os)
	return nil
}

// Reader is the flinkfmt reader under the source, for the rewrites of
// package flinkrewrite, which work on Flink's own model.
func (s *Source) Reader() *flinkfmt.Reader { return s.r }

// Layout says which Flink metadata version and keyed layouts the source
// has.
func (s *Source) Layout() savepoint.Layout { return s.layout }

// Metadata is the model of the savepoint.
func (s *Source) Metadata() *savepoint.Metadata { return s.meta }

// Close releases nothing: iterators close their own files.
func (s *Source) Close() error { return nil }

// Warnings lists the parts skipped so far, each once.
func (s *Source) Warnings() []savepoint.Warning {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.warnings)
}

func (s *Source) warn(uid string, w flinkfmt.Warning) {
	sw := savepoint.Warning{
		File: w.File, KeyGroup: w.KeyGroup, Offset: w.Offset, Length: w.Length, Compressed: w.Compressed,
		Operator: uid, State: w.State, Class: w.Class, Serializer: w.Serializer, Message: w.Message,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.warned[sw] {
		s.warned[sw] = true
		s.warnings = append(s.warnings, sw)
	}
}

// keyedOf returns the operator and the state index of ref.
func (s *Source) keyedOf(ref savepoint.StateRef) (*operator, int, error) {
	if err := s.meta.Check(ref); err != nil {
		return nil, 0, err
	}
	o := s.ops[ref.Operator]
	i, ok := o.byRef[ref]
	if !ok || o.keyed == nil {
		return nil, 0, fmt.Errorf("flinksource: %s has no keyed data", s.meta.Describe(ref))
	}
	return o, i, nil
}

// Segments counts the entries of ref per key group: Flink keeps no index,
// so the first call for an operator reads all of its keyed state.
func (s *Source) Segments(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) ([]savepoint.Segment, error) {
	o, _, err := s.keyedOf(ref)
	if err != nil {
		return nil, err
	}
	o.once.Do(func() { o.segs, o.err = s.count(ctx, o, 0, nil, nil) })
	if o.err != nil {
		return nil, o.err
	}
	var out []savepoint.Segment
	for _, seg := range o.segs[ref] {
		if kgs.Contains(seg.KeyGroup) {
			out = append(out, seg)
		}
	}
	return out, nil
}

// visitFunc is given the entries of one segment (a state in a key group),
// on worker w; the calls of one worker come one after another.
type visitFunc = func(w int, ref savepoint.StateRef, it savepoint.EntryIterator) error

// CountSegments reads the keyed state of every operator once, on n workers
// (0 for the default), and returns every segment with its figures, as
// savepoint.AllSegments would: a tool that reads every entry anyway, as a
// scan does, gets them from the read that counts them, since Flink keeps no
// index. visit is given each segment's entries as they are counted; its
// iterator's Err is always nil, since an unreadable key group is reported,
// as Segments reports it, by CountSegments. progress, when set, is told of
// the stored bytes read so far and in all (in all as far as it is known
// before the read: native RocksDB handles do not give their key groups'
// sizes). An operator whose segments were
// counted before is read segment by segment.
func (s *Source) CountSegments(ctx context.Context, n int, visit func(w int, ref savepoint.StateRef, it savepoint.EntryIterator) error, progress func(done, total int64)) ([]savepoint.Segment, error) {
	var total int64
	for _, o := range s.ops {
		for _, sp := range o.spans {
			total += sp.Length
		}
	}
	var mu sync.Mutex
	var done int64
	tell := func(n int64) {
		mu.Lock()
		defer mu.Unlock()
		done += n
		progress(done, max(done, total))
	}
	if progress == nil {
		tell = nil
	}
	var out []savepoint.Segment
	for op := range s.meta.Operators {
		refs := s.meta.Refs(op)
		if len(refs) == 0 {
			continue
		}
		o, _, err := s.keyedOf(refs[0])
		if err != nil {
			return nil, err
		}
		walked := false
		o.once.Do(func() {
			walked = true
			o.segs, o.err = s.count(ctx, o, n, visit, tell)
		})
		if o.err != nil {
			return nil, o.err
		}
		var segs []savepoint.Segment
		for _, ref := range refs {
			segs = append(segs, o.segs[ref]...)
		}
		if !walked {
			if err := s.visitEach(ctx, segs, n, visit, tell); err != nil {
				return nil, err
			}
		}
		out = append(out, segs...)
	}
	return out, nil
}

// walkAhead is how many segments a walk of a savepoint in a bucket starts
// ahead of the one its workers ask for, and walkBudget the most their
// stored bytes may be.
const (
	walkAhead  = 6
	walkBudget = 32 << 20
)

// WalkSegments is savepoint.WalkSegmentsShared's for s: in a bucket, a
// walk that starts the next segments' reads ahead of the workers
// (savepoint.StartAhead), since each segment's first read is a request:
// walkAhead of them, within a share-th of walkBudget of their bytes, which
// holds fewer large segments but as many small ones; nil, for plain
// iteration, on disk.
func (s *Source) WalkSegments(ctx context.Context, segs []savepoint.Segment, share int) savepoint.Walk {
	if !s.r.InBucket() {
		return nil
	}
	return savepoint.StartAhead(ctx, s, segs, walkAhead, walkBudget/int64(share))
}

// visitEach gives visit the entries of segments counted before.
func (s *Source) visitEach(ctx context.Context, segs []savepoint.Segment, n int, visit visitFunc, progress func(int64)) error {
	return workers.Run(ctx, len(segs), n, func(ctx context.Context, w, i int) error {
		it := savepoint.SegmentEntries(ctx, s, segs[i])
		defer it.Close()
		if err := visit(w, segs[i].Ref, it); err != nil {
			return err
		}
		if err := it.Err(); err != nil {
			return err
		}
		if progress != nil {
			progress(segs[i].Length)
		}
		return nil
	})
}

// segmentWalk is the iterator visit gets: the entries of the counter's
// iterator while they are of one state in one key group, each counted as
// it is read.
type segmentWalk struct {
	c         *counter
	it        *flinkfmt.EntryIterator
	kg, state int
	// first is set until the entry the segment starts with is given;
	// done once the segment ends, and then pending says whether the
	// iterator holds the first entry of the next one.
	first, done, pending bool
	e                    savepoint.Entry
	buf                  []byte
	figs                 [256]flinkfmt.Figures
}

func (w *segmentWalk) start(e *flinkfmt.Entry) {
	w.kg, w.state = e.KeyGroup, e.State
	w.first, w.done, w.pending = true, false, false
}

func (w *segmentWalk) Next() bool {
	fe := w.advance()
	if fe == nil {
		return false
	}
	convert(&w.e, fe, w.c.o.mapKind[w.state], &w.buf)
	return true
}

// NextValues gives the sizes of the values as Next gives them without
// building the entries; Flink records no TTL, so lastModified is never
// filled.
func (w *segmentWalk) NextValues(sizes []int, _ []int64) int {
	mapKind := w.c.o.mapKind[w.state]
	n := 0
	for n < len(sizes) {
		if !w.first && !w.done {
			// Most entries are only counted: their figures will do.
			figs := w.figs[:min(len(w.figs), len(sizes)-n)]
			if k := w.it.NextFigures(figs); k > 0 {
				w.c.addFigures(w.state, figs[:k])
				for i := range figs[:k] {
					sizes[n+i] = figs[i].Value
				}
				n += k
				continue
			}
		}
		fe := w.advance()
		if fe == nil {
			break
		}
		switch {
		case !mapKind:
			sizes[n] = len(fe.Value)
		case fe.Null:
			sizes[n] = 1
		default:
			sizes[n] = 1 + len(fe.Value)
		}
		n++
	}
	return n
}

// advance counts and returns the segment's next entry, nil at its end.
func (w *segmentWalk) advance() *flinkfmt.Entry {
	if w.done {
		return nil
	}
	if w.first {
		w.first = false
	} else if !w.it.Next() {
		w.done = true
		return nil
	}
	fe := w.it.Entry()
	if fe.KeyGroup != w.kg || fe.State != w.state {
		w.done, w.pending = true, true
		return nil
	}
	w.c.add(fe)
	return fe
}

// Segment is where the segment being given lies, as its figures will
// say once it is counted: its state, its key group, and the stored bytes
// of the key group.
func (w *segmentWalk) Segment() savepoint.Segment {
	seg := savepoint.Segment{Ref: w.c.o.refs[w.state], Stats: savepoint.Stats{KeyGroup: w.kg}}
	for _, sp := range w.c.spans[w.kg] {
		if sp.File != "" {
			seg.File, seg.Offset = sp.File, sp.Offset
			break
		}
	}
	return seg
}

func (w *segmentWalk) Entry() *savepoint.Entry { return &w.e }

func (w *segmentWalk) Err() error { return nil }

func (w *segmentWalk) Close() error { return nil }

// count reads every entry of o's keyed state once and sums them per state
// and key group; a key group's stored bytes go to its first segment, since
// all its states lie in one span. Ranges of key groups are counted on n
// workers (0 for the default) and joined in key-group order, so the
// figures, the warnings and which error is reported do not depend on the
// workers' timing. visit, when set, is given each segment's entries as
// they are counted (see CountSegments), and progress each key group's
// stored bytes once it is read.
func (s *Source) count(ctx context.Context, o *operator, n int, visit visitFunc, progress func(int64)) (map[savepoint.StateRef][]savepoint.Segment, error) {
	spans := map[int][]flinkfmt.Span{}
	for _, sp := range o.spans {
		spans[sp.KeyGroup] = append(spans[sp.KeyGroup], sp)
	}
	if n <= 0 {
		n = workers.Default()
	}
	ranges := splitRange(o.keyed.Operator.MaxParallelism, countChunks*n)
	res := make([]counted, len(ranges))
	err := workers.Run(ctx, len(ranges), n, func(ctx context.Context, w, i int) error {
		c := &counter{o: o, spans: spans, cur: make([]cell, len(o.refs)), curKG: -1, progress: progress}
		var visitErr error
		res[i], visitErr = c.run(ctx, ranges[i], w, visit)
		return visitErr
	})
	if err != nil {
		return nil, err
	}
	out := map[savepoint.StateRef][]savepoint.Segment{}
	for _, r := range res {
		for _, w := range r.warnings {
			s.warn(o.uid, w)
		}
		if r.err != nil {
			return nil, r.err
		}
		for _, seg := range r.segs {
			out[seg.Ref] = append(out[seg.Ref], seg)
		}
	}
	return out, nil
}

// countChunks is how many ranges of key groups each worker counts, so that
// an uneven range does not leave a worker idle.
const countChunks = 4

// splitRange splits key groups 0 to n-1 into at most parts ranges.
func splitRange(n, parts int) []keygroup.Range {
	parts = max(1, min(parts, n))
	out := make([]keygroup.Range, 0, parts)
	for i := range parts {
		if r := (keygroup.Range{Start: i * n / parts, End: (i+1)*n/parts - 1}); r.Len() > 0 {
			out = append(out, r)
		}
	}
	return out
}

// counted is what counting a range of key groups found, its segments in
// key-group order.
type counted struct {
	segs     []savepoint.Segment
	warnings []flinkfmt.Warning
	err      error
}

// cell is one state's figures in the current key group. A key's entries
// lie together in both canonical orders, so the set of keys is consulted
// only when the key changes.
type cell struct {
	seg  savepoint.Segment
	used bool
	last []byte
	keys *keySet
}

// counter sums the entries of a range of key groups into segments.
type counter struct {
	o     *operator
	spans map[int][]flinkfmt.Span
	cur   []cell
	curKG int
	// state is the state of the entry add was given last.
	state    int
	res      counted
	progress func(int64)
}

// run counts the entries of kgs; with visit set, it gives visit each
// segment's entries, on worker w, and returns what visit returned.
func (c *counter) run(ctx context.Context, kgs keygroup.Range, w int, visit visitFunc) (counted, error) {
	it := c.o.keyed.Entries(ctx, -1, kgs)
	defer it.Close()
	var visitErr error
	if visit == nil {
		var figs [256]flinkfmt.Figures
		for {
			if n := it.NextFigures(figs[:]); n > 0 {
				c.addFigures(c.state, figs[:n])
				continue
			}
			if !it.Next() {
				break
			}
			c.add(it.Entry())
		}
	} else {
		seg := &segmentWalk{c: c, it: it}
		for more := it.Next(); more && visitErr == nil; more = seg.pending {
			e := it.Entry()
			seg.start(e)
			if visitErr = visit(w, c.o.refs[e.State], seg); visitErr == nil {
				// An entry visit left unread still counts.
				for seg.Next() {
				}
			}
		}
	}
	if visitErr != nil {
		return counted{}, visitErr
	}
	c.flush()
	c.res.warnings, c.res.err = it.Warnings(), it.Err()
	return c.res, nil
}

func (c *counter) flush() {
	first := true
	for i := range c.cur {
		cl := &c.cur[i]
		if !cl.used {
			continue
		}
		for _, sp := range c.spans[c.curKG] {
			if cl.seg.File == "" {
				cl.seg.File, cl.seg.Offset = sp.File, sp.Offset
			}
			if first {
				cl.seg.Length += sp.Length
			}
		}
		if cl.seg.File == "" {
			cl.seg.Offset, cl.seg.Length = 0, int64(cl.seg.Bytes)
		}
		if c.progress != nil {
			c.progress(cl.seg.Length)
		}
		first = false
		c.res.segs = append(c.res.segs, cl.seg)
		cl.used = false
	}
}

func (c *counter) add(e *flinkfmt.Entry) {
	o := c.o
	if e.KeyGroup != c.curKG {
		c.flush()
		c.curKG = e.KeyGroup
	}
	c.state = e.State
	cl := &c.cur[e.State]
	if !cl.used {
		cl.seg = savepoint.Segment{Ref: o.refs[e.State], Stats: savepoint.Stats{KeyGroup: e.KeyGroup}}
		cl.used = true
		if cl.keys == nil {
			cl.keys = newKeySet()
		}
		cl.keys.reset()
	}
	if cl.seg.Entries == 0 || !bytes.Equal(e.Key, cl.last) {
		cl.newKey(e.Key)
	}
	cl.seg.Entries++
	cl.seg.Bytes += uint64(len(e.Key) + len(e.Namespace) + len(e.MapKey) + len(e.Value))
	if o.mapKind[e.State] {
		cl.seg.Bytes++
	}
	if o.refs[e.State].Timer {
		// Flink stores a timer's time with its key.
		cl.seg.Bytes += 8
		if cl.seg.Entries == 1 || e.Timestamp < cl.seg.MinTimestamp {
			cl.seg.MinTimestamp = e.Timestamp
		}
		if cl.seg.Entries == 1 || e.Timestamp > cl.seg.MaxTimestamp {
			cl.seg.MaxTimestamp = e.Timestamp
		}
	}
}

func (cl *cell) newKey(key []byte) {
	cl.keys.add(key)
	cl.seg.Keys = cl.keys.n
	cl.last = append(cl.last[:0], key...)
}

// addFigures counts figs, the figures of entries that follow the last one
// add was given, in its state and key group.
func (c *counter) addFigures(state int, figs []flinkfmt.Figures) {
	cl := &c.cur[state]
	for i := range figs {
		f := &figs[i]
		if !f.SameKey && !bytes.Equal(f.Key, cl.last) {
			cl.newKey(f.Key)
		}
		cl.seg.Bytes += uint64(f.Bytes)
	}
	cl.seg.Entries += uint64(len(figs))
}

// Entries iterates the entries of ref in kgs, key group by key group.
func (s *Source) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	o, i, err := s.keyedOf(ref)
	if err != nil {
		return savepoint.Failed(err)
	}
	return &entries{s: s, o: o, it: o.keyed.Entries(ctx, i, kgs), nullFlag: o.mapKind[i]}
}

// entries adapts flinkfmt's iterator: a map state's values get their null
// flag back, and what it skipped becomes the source's warnings.
type entries struct {
	s        *Source
	o        *operator
	it       *flinkfmt.EntryIterator
	nullFlag bool
	e        savepoint.Entry
	buf      []byte
	done     bool
}

func (it *entries) Next() bool {
	if it.done {
		return false
	}
	if !it.it.Next() {
		it.finish()
		return false
	}
	convert(&it.e, it.it.Entry(), it.nullFlag, &it.buf)
	return true
}

// convert sets e to fe as the seam gives it: with nullFlag, the value with
// its null flag back, built in *buf.
func convert(e *savepoint.Entry, fe *flinkfmt.Entry, nullFlag bool, buf *[]byte) {
	*e = fe.Entry
	if nullFlag {
		b := (*buf)[:0]
		if fe.Null {
			b = append(b, 1)
		} else {
			b = append(append(b, 0), fe.Value...)
		}
		*buf = b
		e.Value = b
	}
}

// NextValues gives the sizes of values as Entry gives them (a map value
// with its null flag) without building the entries; Flink records no TTL,
// so lastModified is never filled.
func (it *entries) NextValues(sizes []int, _ []int64) int {
	if it.done {
		return 0
	}
	n := it.it.NextValueSizes(sizes)
	if n < len(sizes) {
		it.finish()
	}
	return n
}

func (it *entries) finish() {
	if !it.done {
		it.done = true
		for _, w := range it.it.Warnings() {
			it.s.warn(it.o.uid, w)
		}
	}
}

// Prime makes the iteration's first read (savepoint.Primer).
func (it *entries) Prime() { it.it.Prime() }

func (it *entries) Entry() *savepoint.Entry { return &it.e }

func (it *entries) Err() error { return it.it.Err() }

func (it *entries) Close() error {
	it.finish()
	return it.it.Close()
}
