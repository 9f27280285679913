package flinkrewrite

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/keygroup"
)

// streamPlan is one output stream of an operator's keyed state whose key
// groups are each read from the one input part that holds it: the key
// groups it covers, and the managed parts that hold them, whose headers
// it merges.
type streamPlan struct {
	kgs   keygroup.Range
	parts []int
	kind  flinkfmt.KeyedKind
}

// managedParts returns the indexes of the parts of k that hold managed
// keyed state (not the raw keyed state of legacy timers).
func managedParts(k *flinkfmt.Keyed) []int {
	var out []int
	for i, p := range k.Parts() {
		if p.Layout != flinkfmt.LayoutRawTimers {
			out = append(out, i)
		}
	}
	return out
}

// partsByKeyGroup maps each key group to the managed part that holds it,
// or -1.
func partsByKeyGroup(k *flinkfmt.Keyed, maxP int) []int {
	of := make([]int, maxP)
	for i := range of {
		of[i] = -1
	}
	parts := k.Parts()
	for _, p := range managedParts(k) {
		r := parts[p].Handle.KeyGroups.Intersect(keygroup.All(maxP))
		for kg := r.Start; kg <= r.End; kg++ {
			of[kg] = p
		}
	}
	return of
}

// planStreams covers ranges, one output stream each, with the parts that
// hold their key groups, and checks that their headers can be merged.
func planStreams(k *flinkfmt.Keyed, maxP int, ranges []keygroup.Range) ([]streamPlan, error) {
	of := partsByKeyGroup(k, maxP)
	plans := make([]streamPlan, len(ranges))
	kind := outputKind(k)
	for i, r := range ranges {
		plans[i].kgs, plans[i].kind = r, kind
		for kg := r.Start; kg <= r.End; kg++ {
			if p := of[kg]; p >= 0 && !slices.Contains(plans[i].parts, p) {
				plans[i].parts = append(plans[i].parts, p)
			}
		}
		if len(plans[i].parts) == 0 {
			// A stream without data still has the header Flink would write.
			plans[i].parts = managedParts(k)
		}
		if _, err := k.CanonicalHeader(plans[i].parts); err != nil {
			return nil, err
		}
	}
	return plans, nil
}

// entryFilter decides whether an entry of a state (an index into
// Keyed.States) is kept.
type entryFilter func(state int, e *flinkfmt.Entry) (bool, error)

// keyGroupJob rewrites an operator's keyed state key group by key group:
// every key group stays where it is (the max parallelism does not change),
// read from its input part, filtered, and written to the output stream
// whose range holds it.
type keyGroupJob struct {
	k        *flinkfmt.Keyed
	maxP     int
	streams  []streamPlan
	filter   entryFilter
	sortKeys bool
	// read and kept count entries by state.
	read, kept []atomic.Uint64
}

func newKeyGroupJob(k *flinkfmt.Keyed, streams []streamPlan) *keyGroupJob {
	return &keyGroupJob{k: k, maxP: k.Operator.MaxParallelism, streams: streams,
		read: make([]atomic.Uint64, len(k.States)), kept: make([]atomic.Uint64, len(k.States))}
}

// run writes the streams into o, one handle each, or with a nil o only
// reads and counts.
func (j *keyGroupJob) run(ctx context.Context, o *output, workers int) ([]*flinkfmt.KeyedHandle, error) {
	handles := make([]*flinkfmt.KeyedHandle, len(j.streams))
	of := partsByKeyGroup(j.k, j.maxP)
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range min(workers, len(j.streams)) {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(j.streams) {
					return nil
				}
				h, err := j.stream(ctx, o, i, of)
				if err != nil {
					return err
				}
				handles[i] = h
			}
		})
	}
	return handles, g.Wait()
}

func (j *keyGroupJob) stream(ctx context.Context, o *output, i int, of []int) (*flinkfmt.KeyedHandle, error) {
	plan := j.streams[i]
	header, err := j.k.CanonicalHeader(plan.parts)
	if err != nil {
		return nil, err
	}
	var sw *flinkfmt.StreamWriter
	var cw *flinkfmt.CanonicalWriter
	if o != nil {
		sw = o.stream(fmt.Sprintf("keyed state of operator %s, key groups %v", j.k.Operator.ID, plan.kgs))
		defer sw.Close()
		if cw, err = flinkfmt.NewCanonicalWriter(sw, header, j.maxP, plan.kgs); err != nil {
			return nil, err
		}
	}
	parts := j.k.Parts()
	var entries []flinkfmt.Entry
	enc := j.k.PairEncoder()
	for kg := plan.kgs.Start; kg <= plan.kgs.End; kg++ {
		p := of[kg]
		if p < 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if entries, err = readKeyGroup(ctx, j.k, parts[p], p, kg, entries[:0]); err != nil {
			return nil, err
		}
		kept := entries[:0]
		for x := range entries {
			e := &entries[x]
			j.read[e.State].Add(1)
			if j.filter != nil {
				ok, err := j.filter(e.State, e)
				if err != nil {
					return nil, fmt.Errorf("operator %s key group %d: %w", j.k.Operator.ID, kg, err)
				}
				if !ok {
					continue
				}
			}
			j.kept[e.State].Add(1)
			kept = append(kept, *e)
		}
		if cw == nil {
			continue
		}
		add := func(pr flinkfmt.Pair) error { return cw.Add(kg, header.IDs[pr.State], pr.Key, pr.Value) }
		if !j.sortKeys {
			if err := enc.Each(kept, add); err != nil {
				return nil, err
			}
		} else {
			pairs := enc.Encode(kept)
			slices.SortStableFunc(pairs, func(a, b flinkfmt.Pair) int {
				return cmp.Or(cmp.Compare(header.IDs[a.State], header.IDs[b.State]), bytes.Compare(a.Key, b.Key))
			})
			for _, pr := range pairs {
				if err := add(pr); err != nil {
					return nil, err
				}
			}
		}
		o.meter.Add(parts[p].Handle.Size() / int64(max(1, parts[p].Handle.KeyGroups.Len())))
	}
	if cw == nil {
		return nil, nil
	}
	offsets, err := cw.Finish()
	if err != nil {
		return nil, err
	}
	s, err := sw.Finish()
	if err != nil {
		return nil, err
	}
	h := &flinkfmt.KeyedHandle{Kind: plan.kind, KeyGroups: plan.kgs, Offsets: offsets, Stream: s}
	if plan.kind == flinkfmt.KeyedKeyGroupsV2 {
		h.HandleID = o.fileName(fmt.Sprintf("handle id of operator %s, key groups %v", j.k.Operator.ID, plan.kgs))
	}
	return h, nil
}

// readKeyGroup reads every entry of a key group of part. A value of the
// heap layout whose end cannot be found (a Kryo class that only the job
// knows) leaves the rest of the key group unread: it cannot be rewritten.
func readKeyGroup(ctx context.Context, k *flinkfmt.Keyed, part flinkfmt.Part, p, kg int, dst []flinkfmt.Entry) ([]flinkfmt.Entry, error) {
	// Entries kept from an earlier, larger key group would keep its bytes
	// alive.
	clear(dst[:cap(dst)])
	entries, warns, err := k.ReadKeyGroup(ctx, p, kg, dst)
	if err != nil {
		return nil, err
	}
	if len(warns) > 0 && part.Layout == flinkfmt.LayoutHeap {
		return nil, fmt.Errorf("%w: operator %s: %s: the key group cannot be rewritten", flinkfmt.ErrUnsupported, k.Operator.ID, warns[0])
	}
	return entries, nil
}

// outputKind is the keyed handle kind of an operator's rewritten state
// when its key groups may mix parts:
// the input's when every part is canonical and of one kind (Flink 1.13 on
// marks savepoints with their own kind, RocksDB's full snapshots before
// use the checkpoint's), the savepoint kind otherwise, since the heap
// backend restores the canonical layout only from it.
func outputKind(k *flinkfmt.Keyed) flinkfmt.KeyedKind {
	var kind flinkfmt.KeyedKind
	parts := k.Parts()
	for _, p := range managedParts(k) {
		if parts[p].Layout != flinkfmt.LayoutCanonical || kind != 0 && parts[p].Handle.Kind != kind {
			return flinkfmt.KeyedSavepointKeyGroups
		}
		kind = parts[p].Handle.Kind
	}
	if kind == 0 {
		return flinkfmt.KeyedSavepointKeyGroups
	}
	return kind
}

// partKind is the keyed handle kind of a part written again on its own:
// its kind when it is canonical, the savepoint kind for the heap layout.
func partKind(p flinkfmt.Part) flinkfmt.KeyedKind {
	if p.Layout == flinkfmt.LayoutCanonical {
		return p.Handle.Kind
	}
	return flinkfmt.KeyedSavepointKeyGroups
}
