package sizing

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// MeasureOptions controls MeasureSavepoint.
type MeasureOptions struct {
	// Now is the time TTL ages are taken at, in epoch milliseconds.
	Now int64
	// SampleBytes bounds the savepoint bytes read per state; 0 reads
	// every entry. A larger state is measured on its first key groups.
	SampleBytes int64
	// Operator restricts the measurement to one operator uid.
	Operator string
	// TempDir holds the Pebble databases the samples are loaded into; ""
	// means the system's temporary directory.
	TempDir string
}

// MeasureSavepoint measures every keyed state and timer service of the
// savepoint r, read through the read seam (source names it in the
// report). From the index it takes the
// keys, entries and bytes of every key group; it streams the entries of a
// sample to split the bytes of an entry, evaluate the heap model, age the
// TTL entries at Now, and count timers per key and set them against the
// job's time that the savepoint records (see TimerStats); and it loads the
// same sample into a real Pebble backend to measure the bytes on disk.
//
// The sample is the key groups from 0 up to SampleBytes of data. Keys are
// spread over key groups by a hash, so the first key groups are as good a
// sample as any, and a whole key group is what a backend restores.
//
// A savepoint whose serializers are another project's (Apache Flink's,
// external snapshots) fits neither stateproc's heap model nor its Pebble
// backend. Its figures follow the seeds' arithmetic instead, and the job's
// Basis says so: Flink's RocksDB backend keeps every entry's serialized
// key, namespace, map key and value (with its 8-byte TTL timestamp), so
// the Pebble figure is the serialized bytes before compression; its heap
// backend keeps Java objects, three to five times the serialized bytes.
func MeasureSavepoint(ctx context.Context, r savepoint.Source, source string, opts MeasureOptions) (*Job, error) {
	meta := r.Metadata()
	job := &Job{Source: source, Now: opts.Now}
	pm := newPebbleMeter(opts.TempDir, opts.Now)
	// The states in the report's order, each with the meter it is loaded
	// into Pebble with (none past an operator of Apache Flink's).
	type measured struct {
		op  int
		ref savepoint.StateRef
		pm  *pebbleMeter
		st  *State
	}
	var states []measured
	for i := range meta.Operators {
		op := &meta.Operators[i]
		if !op.Keyed() || (opts.Operator != "" && op.UID != opts.Operator) {
			continue
		}
		if op.Key.Kind == serializers.KindExternal {
			pm = nil
			job.HeapOverhead, job.Basis = &flinkHeapOverhead, flinkBasis
		}
		job.Operators = append(job.Operators, Operator{UID: op.UID, Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism})
		for _, ref := range meta.Refs(i) {
			states = append(states, measured{op: len(job.Operators) - 1, ref: ref, pm: pm})
		}
	}
	// In a bucket a state's reads start with a few round trips: several
	// states are measured at once, their loads into Pebble one per core.
	err := workers.Run(ctx, len(states), statesAtOnce, func(ctx context.Context, _, i int) error {
		st, err := measureState(ctx, r, states[i].ref, opts, states[i].pm)
		if err != nil {
			return fmt.Errorf("sizing: operator %q: %w", job.Operators[states[i].op].UID, err)
		}
		states[i].st = st
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, m := range states {
		o := &job.Operators[m.op]
		o.States = append(o.States, *m.st)
	}
	return job, nil
}

// statesAtOnce is how many states MeasureSavepoint measures at once.
const statesAtOnce = 4

// The seeds' arithmetic for a savepoint of Apache Flink's.
var flinkHeapOverhead = Range{Low: 3, High: 5}

const flinkBasis = "Apache Flink's backends, by the seeds' arithmetic: heap is its HashMapStateBackend's Java objects at 3 to 5 × the serialized bytes; pebble stands for its RocksDB backend, the serialized bytes before compression"

// describe returns the state with its name, kind, TTL and heap shape.
func describe(meta *savepoint.Metadata, ref savepoint.StateRef) (*State, error) {
	var err error
	if meta.Operators[ref.Operator].Key.Kind == serializers.KindExternal {
		// The heap model does not apply: the job's overhead factors do.
		st := &State{Name: meta.RefName(ref), Kind: kindTimers}
		if ks := meta.KeyedState(ref); ks != nil {
			st.Kind = ks.Kind.String()
		}
		st.heap = &heapShape{kind: st.Kind, mapKey: noBox, value: noBox}
		return st, nil
	}
	if ref.Timer {
		st := &State{Name: meta.RefName(ref), Kind: kindTimers}
		st.heap, err = newHeapShape(kindTimers, nil, nil)
		return st, err
	}
	ks := meta.KeyedState(ref)
	st := &State{Name: ks.Name, Kind: ks.Kind.String(), TTL: ks.TTL}
	st.ValueCollection = ks.Kind.SingleValue() && (ks.Value.Kind == serializers.KindList || ks.Value.Kind == serializers.KindMap)
	var mapKey *serializers.Snapshot
	if ks.Kind == savepoint.Map {
		mapKey = &ks.MapKey
	}
	if st.heap, err = newHeapShape(st.Kind, mapKey, &ks.Value); err != nil {
		return nil, fmt.Errorf("state %q: %w", ks.Name, err)
	}
	return st, nil
}

func measureState(ctx context.Context, r savepoint.Source, ref savepoint.StateRef, opts MeasureOptions, pm *pebbleMeter) (*State, error) {
	op := &r.Metadata().Operators[ref.Operator]
	st, err := describe(r.Metadata(), ref)
	if err != nil {
		return nil, err
	}
	st.KeyGroups = make([]KeyGroup, op.MaxParallelism)
	segs, err := r.Segments(ctx, ref, keygroup.All(op.MaxParallelism))
	if err != nil {
		return nil, err
	}
	sample := &Sample{WithData: len(segs)}
	var sampled int64
	for _, seg := range segs {
		st.KeyGroups[seg.KeyGroup] = KeyGroup{Keys: float64(seg.Keys), Entries: float64(seg.Entries),
			Bytes: float64(seg.Bytes), Stored: float64(seg.Length)}
		sample.Of += seg.Entries
		if opts.SampleBytes <= 0 || sampled < opts.SampleBytes {
			sample.KeyGroups++
			sample.Entries += seg.Entries
			sampled += int64(seg.Bytes)
		}
	}
	st.Sample = sample
	if len(segs) == 0 {
		st.PebbleFrom = "measured"
		if pm == nil {
			st.PebbleFrom = "serialized bytes"
		}
		return st, nil
	}
	// The tally and the load into Pebble read the same sample, each on its
	// own goroutine.
	var timers *TimerStats
	if st.Kind == kindTimers {
		timers = newTimerStats(timerClock(r.Metadata(), ref))
	}
	t := newTally(st.Kind, st.TTL, opts.Now, st.heap, timers)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		// In a bucket the walk reads the next segments ahead.
		walk := savepoint.WalkSegmentsShared(gctx, r, segs[:sample.KeyGroups], 4)
		defer walk.Close()
		for i, seg := range segs[:sample.KeyGroups] {
			if err := t.segment(seg, walk.Entries(gctx, i)); err != nil {
				return err
			}
		}
		return nil
	})
	var onDisk float64
	if pm != nil {
		g.Go(func() error {
			var err error
			if onDisk, err = pm.measure(gctx, r, ref, segs[:sample.KeyGroups]); err != nil {
				return fmt.Errorf("%s %q: measuring on Pebble: %w", st.Kind, st.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	t.finish(st, float64(sample.Of))
	if pm == nil {
		st.PebblePerByte, st.PebbleFrom = 1, "serialized bytes"
		return st, nil
	}
	st.PebblePerByte = onDisk / float64(sampled)
	st.PebbleFrom = "measured"
	return st, nil
}
