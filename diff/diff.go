package diff

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinkrewrite"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/internal/workdir"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Side is one savepoint of a comparison.
type Side struct {
	Source savepoint.Source
	// Path is where Source was read from: the report names it, and
	// re-bucketing B reads it.
	Path string
}

// Options narrow a comparison and say how it runs.
type Options struct {
	// Operator, when set, compares only the operator with this uid.
	Operator string
	// State, when set, compares only the states (keyed, timer service,
	// operator or broadcast) with this name.
	State string
	// Examples, when above 0, lists up to that many keys of each kind per
	// state.
	Examples int
	// Workers is how many key groups are compared at once; 0 means one per
	// core.
	Workers int
	// TempDir holds B's operators re-bucketed to A's max parallelism; ""
	// means the system's temporary directory. It needs about as much free
	// space as those operators take.
	TempDir string
	// Memory is the sort budget of a re-bucketing; 0 is rescale's default.
	Memory int
}

// ErrNotFound is wrapped by the error for an Operator or State that
// neither savepoint has.
var ErrNotFound = errors.New("diff: not found")

// Compare compares a with b. Neither is modified; re-bucketed copies are
// written under Options.TempDir and removed before it returns.
func Compare(ctx context.Context, a, b Side, opts Options) (*Report, error) {
	if opts.Examples < 0 {
		return nil, fmt.Errorf("diff: %d examples", opts.Examples)
	}
	c := &comparison{a: a, b: b, opts: opts}
	defer c.cleanup()
	rep, err := c.plan(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.run(ctx); err != nil {
		return nil, err
	}
	for _, p := range c.pairs {
		p.finish()
		rep.Differ = rep.Differ || p.diff.Entries.Differ() || (p.diff.Keys != nil && p.diff.Keys.Differ())
	}
	for i := range rep.OperatorStates {
		rep.Differ = rep.Differ || rep.OperatorStates[i].Entries.Differ()
	}
	return rep, nil
}

func info(s Side) SavepointInfo {
	m := s.Source.Metadata()
	return SavepointInfo{Path: storage.Shown(s.Path), Layout: s.Source.Layout().String(), ID: m.ID, Created: jsonvalue.Instant(m.CreatedAt)}
}

// comparison is one Compare under way.
type comparison struct {
	a, b  Side
	opts  Options
	pairs []*statePair
	// temp is the directory of B's re-bucketed operators, once made;
	// opened are the sources read from it.
	temp   *workdir.Dir
	opened []savepoint.Source
}

func (c *comparison) cleanup() {
	for _, s := range c.opened {
		s.Close()
	}
	if c.temp != nil {
		c.temp.Remove()
	}
}

// opPair is an operator of A, B or both: an index into each metadata's
// operators, or -1.
type opPair struct{ a, b int }

// matchOperators pairs operators by uid: A's in its order, then those only
// in B in B's.
func matchOperators(ma, mb *savepoint.Metadata) []opPair {
	var out []opPair
	seen := map[string]bool{}
	for i := range ma.Operators {
		p := opPair{a: i, b: -1}
		for j := range mb.Operators {
			if mb.Operators[j].UID == ma.Operators[i].UID {
				p.b = j
				break
			}
		}
		seen[ma.Operators[i].UID] = true
		out = append(out, p)
	}
	for j := range mb.Operators {
		if !seen[mb.Operators[j].UID] {
			out = append(out, opPair{a: -1, b: j})
		}
	}
	return out
}

func presence(a, b bool) Presence {
	switch {
	case a && b:
		return InBoth
	case a:
		return OnlyA
	}
	return OnlyB
}

func shape(op *savepoint.Operator) *OperatorShape {
	s := &OperatorShape{Name: op.Name, Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism}
	if op.Keyed() {
		s.KeyType = op.Key.String()
	}
	return s
}

// plan pairs operators and states, applies the filters, re-buckets what
// needs it and lays out the work; it fills in everything but the counts of
// keyed data.
func (c *comparison) plan(ctx context.Context) (*Report, error) {
	ma, mb := c.a.Source.Metadata(), c.b.Source.Metadata()
	rep := &Report{A: info(c.a), B: info(c.b), Operators: []OperatorDiff{}, States: []StateDiff{}, OperatorStates: []OperatorStateDiff{}}
	var uids []string
	for _, op := range matchOperators(ma, mb) {
		var oa, ob *savepoint.Operator
		if op.a >= 0 {
			oa = &ma.Operators[op.a]
		}
		if op.b >= 0 {
			ob = &mb.Operators[op.b]
		}
		uid := either(oa, ob).UID
		uids = append(uids, uid)
		if c.opts.Operator != "" && uid != c.opts.Operator {
			continue
		}
		od := OperatorDiff{UID: uid, In: presence(oa != nil, ob != nil)}
		if oa != nil {
			od.A = shape(oa)
		}
		if ob != nil {
			od.B = shape(ob)
		}
		pairs := c.keyedPairs(op, oa, ob)
		nonKeyed, err := c.operatorStates(oa, ob)
		if err != nil {
			return nil, err
		}
		if c.opts.State != "" && len(pairs) == 0 && len(nonKeyed) == 0 {
			continue
		}
		srcB := c.b.Source
		if c.needsRebucket(oa, ob, pairs) {
			if srcB, err = c.rebucket(ctx, op.b, oa.MaxParallelism); err != nil {
				return nil, err
			}
			od.Rebucketed = true
		}
		for _, p := range pairs {
			if err := c.segments(ctx, p, srcB); err != nil {
				return nil, err
			}
			rep.States = append(rep.States, *p.diff)
		}
		rep.Operators = append(rep.Operators, od)
		rep.OperatorStates = append(rep.OperatorStates, nonKeyed...)
	}
	// The pairs, in the order of their diffs, fill them in from here on.
	for i, p := range c.pairs {
		p.diff = &rep.States[i]
	}
	switch {
	case c.opts.Operator != "" && len(rep.Operators) == 0:
		return nil, fmt.Errorf("%w: no operator %q in either savepoint (operators: %v)", ErrNotFound, c.opts.Operator, uids)
	case c.opts.State != "" && len(rep.States) == 0 && len(rep.OperatorStates) == 0:
		return nil, fmt.Errorf("%w: no state %q in either savepoint", ErrNotFound, c.opts.State)
	}
	return rep, nil
}

// keyedPairs pairs the keyed states and timer services of an operator by
// name: A's in its order, then those only in B.
func (c *comparison) keyedPairs(op opPair, oa, ob *savepoint.Operator) []*statePair {
	ma, mb := c.a.Source.Metadata(), c.b.Source.Metadata()
	var out []*statePair
	add := func(p *statePair) {
		if c.opts.State != "" && p.diff.Name != c.opts.State {
			return
		}
		c.pairs = append(c.pairs, p)
		out = append(out, p)
	}
	var refsB []savepoint.StateRef
	if ob != nil {
		refsB = mb.Refs(op.b)
	}
	matched := map[savepoint.StateRef]bool{}
	if oa != nil {
		for _, ra := range ma.Refs(op.a) {
			p := &statePair{refA: ra, hasA: true}
			name := ma.RefName(ra)
			for _, rb := range refsB {
				if rb.Timer == ra.Timer && mb.RefName(rb) == name {
					p.refB, p.hasB = rb, true
					matched[rb] = true
					break
				}
			}
			p.describe(ma, mb, oa.UID, name)
			add(p)
		}
	}
	for _, rb := range refsB {
		if !matched[rb] {
			p := &statePair{refB: rb, hasB: true}
			p.describe(ma, mb, ob.UID, mb.RefName(rb))
			add(p)
		}
	}
	return out
}

// needsRebucket says whether B's operator must move to A's key groups
// before its keyed data compares: both sides hold keyed data of a state
// they share at different max parallelisms.
func (c *comparison) needsRebucket(oa, ob *savepoint.Operator, pairs []*statePair) bool {
	if oa == nil || ob == nil || oa.MaxParallelism == ob.MaxParallelism {
		return false
	}
	for _, p := range pairs {
		if p.hasA && p.hasB && p.comparable {
			return true
		}
	}
	return false
}

// rebucket rewrites B's operator op at max parallelism maxP into the
// comparison's temporary directory and opens the result.
func (c *comparison) rebucket(ctx context.Context, op, maxP int) (savepoint.Source, error) {
	ob := &c.b.Source.Metadata().Operators[op]
	if c.b.Path == "" {
		return nil, fmt.Errorf("diff: operator %q has another max parallelism in B, which cannot be re-bucketed without its path", ob.UID)
	}
	if c.temp == nil {
		dir, err := workdir.Create(c.opts.TempDir, "stateproc-diff-")
		if err != nil {
			return nil, err
		}
		c.temp = dir
	}
	out := filepath.Join(c.temp.Path, fmt.Sprintf("b-op%03d-maxp%d", op, maxP))
	if err := c.rescaleB(ctx, ob, maxP, out); err != nil {
		if errors.Is(err, rewrite.ErrRefused) {
			return nil, fmt.Errorf("diff: operator %q has max parallelism %d in A and %d in B, and B's cannot be re-bucketed: %w: %w",
				ob.UID, maxP, ob.MaxParallelism, savepoint.ErrUnsupported, err)
		}
		return nil, fmt.Errorf("diff: re-bucketing operator %q of B to max parallelism %d: %w", ob.UID, maxP, err)
	}
	src, err := layouts.Open(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("diff: reading operator %q of B re-bucketed: %w", ob.UID, err)
	}
	c.opened = append(c.opened, src)
	return src, nil
}

// rescaleB writes B's operator ob at max parallelism maxP into out: through
// package rescale for stateproc's layout, and through flinkrewrite, which
// hashes keys as Flink does, for a Flink savepoint or checkpoint.
func (c *comparison) rescaleB(ctx context.Context, ob *savepoint.Operator, maxP int, out string) error {
	fl, ok := c.b.Source.(interface{ Reader() *flinkfmt.Reader })
	if !ok {
		ro := rescale.Options{MaxParallelism: maxP, Parallelism: min(ob.Parallelism, maxP), Operator: ob.UID, Workers: c.opts.Workers, Memory: c.opts.Memory}
		_, err := rescale.Run(ctx, c.b.Source, c.b.Path, ro, rewrite.Options{Out: out})
		return err
	}
	st, err := storage.Stage(out, false)
	if err != nil {
		return err
	}
	ro := flinkrewrite.RescaleOptions{MaxParallelism: maxP, Parallelism: min(ob.Parallelism, maxP), Operator: ob.ID, Memory: c.opts.Memory, SpillDir: c.temp.Path}
	if _, err := flinkrewrite.Rescale(ctx, fl.Reader(), st, ro); err != nil {
		st.Abort()
		return err
	}
	return st.Publish(ctx)
}

// segments reads the segments of both sides of p: each side's figures come
// from its own index, the work from srcB, B re-bucketed when it had to be.
func (c *comparison) segments(ctx context.Context, p *statePair, srcB savepoint.Source) error {
	var err error
	if p.hasA {
		ma := c.a.Source.Metadata()
		if p.segsA, err = c.a.Source.Segments(ctx, p.refA, keygroup.All(ma.Operators[p.refA.Operator].MaxParallelism)); err != nil {
			return err
		}
		p.diff.A = figures(p.segsA, p.typeA)
	}
	if p.hasB {
		mb := c.b.Source.Metadata()
		all := keygroup.All(mb.Operators[p.refB.Operator].MaxParallelism)
		segs, err := c.b.Source.Segments(ctx, p.refB, all)
		if err != nil {
			return err
		}
		p.diff.B = figures(segs, p.typeB)
		p.srcB, p.segsB = c.b.Source, segs
		if srcB != c.b.Source {
			if p.segsB, err = srcB.Segments(ctx, p.refB, keygroup.All(srcB.Metadata().Operators[p.refB.Operator].MaxParallelism)); err != nil {
				return err
			}
			p.srcB = srcB
		}
	}
	if c.opts.Examples > 0 {
		p.examples = newExampleSet(c.opts.Examples)
		if p.hasA {
			if p.decA, err = newDecoder(c.a.Source.Metadata(), p.refA); err != nil {
				return err
			}
		}
		if p.hasB {
			if p.decB, err = newDecoder(p.srcB.Metadata(), p.refB); err != nil {
				return err
			}
		}
	}
	return nil
}

func figures(segs []savepoint.Segment, typ string) *Figures {
	f := &Figures{Type: typ}
	for _, s := range segs {
		f.Keys += s.Keys
		f.Entries += s.Entries
		f.Bytes += s.Bytes
	}
	return f
}

// run compares every key group of every pair on the workers.
func (c *comparison) run(ctx context.Context) error {
	var items []item
	for _, p := range c.pairs {
		items = p.items(items)
	}
	// The segments that the items read, side by side in the items' order,
	// which the workers take them in: in a bucket their walks read them
	// ahead. A segment counted from its index alone is not read.
	walks := map[savepoint.Source]*itemWalk{}
	walkOf := func(src savepoint.Source, seg *savepoint.Segment) (*itemWalk, int) {
		w := walks[src]
		if w == nil {
			w = &itemWalk{src: src, unsorted: src.Layout().Unsorted}
			walks[src] = w
		}
		w.segs = append(w.segs, *seg)
		return w, len(w.segs) - 1
	}
	for i := range items {
		it := &items[i]
		both, ex := it.segA != nil && it.segB != nil, it.p.examples != nil
		if it.segA != nil && (both || ex) {
			it.walkA, it.inA = walkOf(c.a.Source, it.segA)
		}
		if it.segB != nil && (both || ex) {
			it.walkB, it.inB = walkOf(it.p.srcB, it.segB)
		}
	}
	for _, w := range walks {
		w.walk = savepoint.WalkSegments(ctx, w.src, w.segs)
		defer w.walk.Close()
	}
	pool := make([]*worker, max(1, cmp.Or(c.opts.Workers, workers.Default())))
	return workers.Run(ctx, len(items), len(pool), func(ctx context.Context, w, i int) error {
		if pool[w] == nil {
			pool[w] = &worker{c: c}
		}
		return pool[w].item(ctx, &items[i])
	})
}

// itemWalk is a walk over the segments of one source that the items read.
type itemWalk struct {
	src  savepoint.Source
	segs []savepoint.Segment
	// unsorted: the source's segments are sorted in memory before the
	// merge (savepoint.Layout.Unsorted).
	unsorted bool
	walk     savepoint.Walk
}

// statePair is a keyed state or timer service of A, B or both, with what
// its comparison has found so far.
type statePair struct {
	diff       *StateDiff
	refA, refB savepoint.StateRef
	hasA, hasB bool
	timers     bool
	// comparable says that both sides exist with the same kind, so that
	// their entries are merged; otherwise each side counts alone.
	comparable   bool
	kind         savepoint.Kind
	typeA, typeB string
	segsA, segsB []savepoint.Segment
	// srcB is the source of segsB: B, or B re-bucketed.
	srcB       savepoint.Source
	decA, decB *decoder

	mu            sync.Mutex
	keys, entries Counts
	examples      *exampleSet
}

// describe fills in the pair's diff and kind from the metadata.
func (p *statePair) describe(ma, mb *savepoint.Metadata, uid, name string) {
	ref := p.refA
	m := ma
	if !p.hasA {
		ref, m = p.refB, mb
	}
	p.timers = ref.Timer
	kindOf := func(m *savepoint.Metadata, r savepoint.StateRef) (string, string) {
		if r.Timer {
			return "timers", m.TimerService(r).Namespace.String()
		}
		ks := m.KeyedState(r)
		return ks.Kind.String(), ks.StoredValue().String()
	}
	kind, _ := kindOf(m, ref)
	if p.hasA {
		_, p.typeA = kindOf(ma, p.refA)
	}
	if p.hasB {
		_, p.typeB = kindOf(mb, p.refB)
	}
	p.comparable = p.hasA && p.hasB
	if p.comparable && !p.timers {
		ka, kb := ma.KeyedState(p.refA).Kind, mb.KeyedState(p.refB).Kind
		if ka != kb {
			p.comparable = false
			kind = ka.String() + " -> " + kb.String()
		}
	}
	if !p.timers {
		p.kind = m.KeyedState(ref).Kind
	}
	p.diff = &StateDiff{Operator: uid, Name: name, Kind: kind, In: presence(p.hasA, p.hasB)}
	if p.hasA && p.hasB {
		p.diff.SerializersChanged = serializersChanged(ma, mb, p.refA, p.refB)
	}
}

// serializersChanged compares the declarations of a state on both sides.
func serializersChanged(ma, mb *savepoint.Metadata, ra, rb savepoint.StateRef) bool {
	if ra.Timer {
		return !ma.TimerService(ra).Namespace.Equal(mb.TimerService(rb).Namespace)
	}
	a, b := ma.KeyedState(ra), mb.KeyedState(rb)
	sameTTL := (a.TTL == nil) == (b.TTL == nil) && (a.TTL == nil || *a.TTL == *b.TTL)
	return !a.Namespace.Equal(b.Namespace) || !a.MapKey.Equal(b.MapKey) || !a.Value.Equal(b.Value) || !sameTTL
}

// item is one key group of one pair: both segments when both sides hold
// it and the pair is comparable, one otherwise.
type item struct {
	p          *statePair
	kg         int
	segA, segB *savepoint.Segment
	// walkA and walkB read segA and segB, as their inA-th and inB-th
	// segments, when the item reads them.
	walkA, walkB *itemWalk
	inA, inB     int
}

func (p *statePair) items(out []item) []item {
	if !p.comparable {
		for i := range p.segsA {
			out = append(out, item{p: p, kg: p.segsA[i].KeyGroup, segA: &p.segsA[i]})
		}
		for i := range p.segsB {
			out = append(out, item{p: p, kg: p.segsB[i].KeyGroup, segB: &p.segsB[i]})
		}
		return out
	}
	i, j := 0, 0
	for i < len(p.segsA) || j < len(p.segsB) {
		it := item{p: p}
		switch {
		case j == len(p.segsB) || i < len(p.segsA) && p.segsA[i].KeyGroup < p.segsB[j].KeyGroup:
			it.kg, it.segA = p.segsA[i].KeyGroup, &p.segsA[i]
			i++
		case i == len(p.segsA) || p.segsB[j].KeyGroup < p.segsA[i].KeyGroup:
			it.kg, it.segB = p.segsB[j].KeyGroup, &p.segsB[j]
			j++
		default:
			it.kg, it.segA, it.segB = p.segsA[i].KeyGroup, &p.segsA[i], &p.segsB[j]
			i++
			j++
		}
		out = append(out, it)
	}
	return out
}

// add merges what one item found.
func (p *statePair) add(keys, entries Counts, ex *[kinds][]Example, kg int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys.add(keys)
	p.entries.add(entries)
	if p.examples != nil {
		p.examples.add(kg, ex)
	}
}

func (p *statePair) finish() {
	if !p.timers {
		k := p.keys
		p.diff.Keys = &k
	}
	p.diff.Entries = p.entries
	if p.examples != nil {
		p.diff.Examples = p.examples.result()
	}
}

// exampleSet keeps the first n examples of each kind in key-group order,
// whatever order the workers finish key groups in.
type exampleSet struct {
	n    int
	kept [kinds][]keptExample
}

type keptExample struct {
	kg, seq int
	ex      Example
}

func newExampleSet(n int) *exampleSet { return &exampleSet{n: n} }

func (s *exampleSet) add(kg int, ex *[kinds][]Example) {
	for k := range ex {
		for i, e := range ex[k] {
			s.kept[k] = append(s.kept[k], keptExample{kg: kg, seq: i, ex: e})
		}
		slices.SortFunc(s.kept[k], func(a, b keptExample) int { return cmp.Or(cmp.Compare(a.kg, b.kg), cmp.Compare(a.seq, b.seq)) })
		if len(s.kept[k]) > s.n {
			s.kept[k] = s.kept[k][:s.n]
		}
	}
}

func (s *exampleSet) result() *Examples {
	out := &Examples{}
	for k := range s.kept {
		l := out.list(kind(k))
		*l = []Example{}
		for _, e := range s.kept[k] {
			*l = append(*l, e.ex)
		}
	}
	return out
}
