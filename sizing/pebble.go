package sizing

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/stateproc/stateproc/engine/pebblebackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/workdir"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// pebbleMeter measures what states take on disk in the engine's own Pebble
// backend: it restores a sample into fresh databases in a temporary
// directory, compacts them, and reads the size of their sstables. A
// restore in the format's order ingests the tables it writes into the
// bottom level, as compaction would leave them.
//
// Every sstable carries about a kilobyte that does not depend on its
// entries (footer, properties, index and filter headers). A subtask's
// database holds few large files, so that overhead vanishes there, while a
// sample of a small state fits in one small file and would be dominated by
// it: the meter measures it once, as the size of a database holding one
// tiny entry, and takes it off every file it measures.
//
// Several states may be measured at once: their loads take turns, one per
// core at a time.
type pebbleMeter struct {
	tempDir string
	now     int64
	// part is the savepoint bytes per database (measurePart when 0).
	part int64
	// slots holds a token for each load under way.
	slots chan struct{}
	// calibrate measures perFile, the fixed overhead of an sstable, once.
	calibrate  sync.Once
	perFile    float64
	perFileErr error
}

func newPebbleMeter(tempDir string, now int64) *pebbleMeter {
	return &pebbleMeter{tempDir: tempDir, now: now, slots: make(chan struct{}, workers.Default())}
}

// measurePart is the savepoint bytes of a sample that the meter loads into
// one database; a larger sample is cut into parts of about this size at key
// group boundaries, loaded into databases of their own in parallel. Tables
// are only ever added up, so the parts measure what one database would, and
// a size fixed in bytes makes the figure the same on every machine.
const measurePart = 16 << 20

// measure returns the bytes on disk of the segments segs of state (or timer
// service) ref, less the sstables' fixed overhead. segs are the first
// segments of ref, in key group order.
func (m *pebbleMeter) measure(ctx context.Context, r savepoint.Source, ref savepoint.StateRef, segs []savepoint.Segment) (float64, error) {
	perFile, err := m.fileOverhead(ctx)
	if err != nil {
		return 0, err
	}
	meta := r.Metadata()
	part := m.part
	if part == 0 {
		part = measurePart
	}
	parts := cutParts(segs, part)
	sizes, files := make([]float64, len(parts)), make([]float64, len(parts))
	err = workers.Run(ctx, len(parts), 0, func(ctx context.Context, _, i int) error {
		var err error
		sizes[i], files[i], err = m.load(ctx, meta.Operators[ref.Operator].MaxParallelism, parts[i], func(b *pebblebackend.Backend) error {
			if err := declare(b, meta, ref); err != nil {
				return err
			}
			return b.Restore(ctx, r, ref.Operator, state.RestoreOptions{AllowNonRestoredState: true, Now: m.now})
		})
		return err
	})
	var size float64
	for i := range parts {
		size += sizes[i] - files[i]*perFile
	}
	return max(0, size), err
}

// cutParts cuts the key groups from 0 to the last of segs into ranges of
// about part savepoint bytes each.
func cutParts(segs []savepoint.Segment, part int64) []keygroup.Range {
	var parts []keygroup.Range
	start, bytes := 0, int64(0)
	for i, seg := range segs {
		bytes += int64(seg.Bytes)
		if bytes >= part || i == len(segs)-1 {
			parts = append(parts, keygroup.Range{Start: start, End: seg.KeyGroup})
			start, bytes = seg.KeyGroup+1, 0
		}
	}
	return parts
}

// fileOverhead calibrates the sstables' fixed overhead once, for every
// state. It is measured apart from the context of the state that asks first:
// that state's failure or cancellation is not every state's.
func (m *pebbleMeter) fileOverhead(ctx context.Context) (float64, error) {
	m.calibrate.Do(func() {
		size, _, err := m.load(context.WithoutCancel(ctx), 1, keygroup.All(1), func(b *pebblebackend.Backend) error {
			v, err := state.GetValue(b, nil, state.NewValue("calibration", serializers.Bytes()))
			if err != nil {
				return err
			}
			if err := b.SetCurrentKey([]byte("k")); err != nil {
				return err
			}
			return v.Update([]byte{1})
		})
		if err != nil {
			m.perFileErr = fmt.Errorf("calibrating: %w", err)
		}
		m.perFile = size
	})
	return m.perFile, m.perFileErr
}

// load opens a backend for key groups kgs in a new temporary directory,
// lets fill put data in it, and returns the compacted size and file count.
func (m *pebbleMeter) load(ctx context.Context, maxP int, kgs keygroup.Range, fill func(*pebblebackend.Backend) error) (size, files float64, err error) {
	if m.slots != nil {
		select {
		case m.slots <- struct{}{}:
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
		defer func() { <-m.slots }()
	}
	work, err := workdir.Create(m.tempDir, "stateproc-size-")
	if err != nil {
		return 0, 0, err
	}
	defer work.Remove()
	b, err := pebblebackend.New(pebblebackend.Options{Dir: filepath.Join(work.Path, "db"), MaxParallelism: maxP, KeyGroups: kgs})
	if err != nil {
		return 0, 0, err
	}
	defer b.Close()
	if err := fill(b); err != nil {
		return 0, 0, err
	}
	bytes, n, err := b.CompactedSize(ctx)
	return float64(bytes), float64(n), err
}

// declare registers state (or timer service) ref with b, with serializers
// restored from the savepoint's snapshots, so that a restore reads it and
// nothing else.
func declare(b *pebblebackend.Backend, meta *savepoint.Metadata, ref savepoint.StateRef) error {
	if ts := meta.TimerService(ref); ts != nil {
		ns, err := serializers.Restore(ts.Namespace)
		if err != nil {
			return err
		}
		_, err = b.Timers(ts.Name, ns)
		return err
	}
	ks := meta.KeyedState(ref)
	spec := &state.Spec{Name: ks.Name, Kind: ks.Kind, TTL: ks.TTL}
	var err error
	if spec.Namespace, err = serializers.Restore(ks.Namespace); err != nil {
		return err
	}
	if spec.Value, err = serializers.Restore(ks.Value); err != nil {
		return err
	}
	switch {
	case ks.Kind == savepoint.Map:
		if spec.MapKey, err = serializers.Restore(ks.MapKey); err != nil {
			return err
		}
		_, err = b.RegisterMap(spec)
	case ks.Kind == savepoint.List:
		_, err = b.RegisterList(spec)
	default:
		_, err = b.RegisterValue(spec)
	}
	return err
}
