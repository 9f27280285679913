package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// IncrementalManifest is the file, in a checkpoint's directory, that makes
// it an incremental checkpoint: the tools look for it to know that the
// keyed state lies in native databases, beside the canonical _metadata.
const IncrementalManifest = chkdir.ManifestName

// OpenCheckpoint opens the checkpoint (or savepoint) in the local
// directory dir for the offline tools, through the read seam: an
// incremental checkpoint's keyed state comes from its native databases,
// which are materialized in a new directory under tempDir (the system's
// temporary directory when empty) and removed by Close; a checkpoint
// without native databases is read as the canonical savepoint it is. Every
// error about the checkpoint's content wraps savepoint.ErrCorrupt.
func OpenCheckpoint(ctx context.Context, dir, tempDir string) (savepoint.Source, error) {
	work, err := os.MkdirTemp(tempDir, "stateproc-checkpoint-")
	if err != nil {
		return nil, err
	}
	src, _, closeAll, err := openSource(ctx, dir, work)
	if err != nil {
		os.RemoveAll(work)
		if errors.Is(err, ErrCorruptCheckpoint) {
			err = corruptCheckpoint(err)
		}
		return nil, err
	}
	cs, ok := src.(*checkpointSource)
	if !ok {
		os.RemoveAll(work)
		return src, nil
	}
	return &CheckpointSource{cs: cs, close: closeAll, segs: map[savepoint.StateRef][]savepoint.Segment{}}, nil
}

// CheckpointSource is an incremental checkpoint as the tools read it. The
// native databases keep no index, so the figures of their segments are
// counted, as a savepoint would hold them, by reading each state once, the
// first time its segments are asked for.
type CheckpointSource struct {
	cs    *checkpointSource
	close func() error

	mu sync.Mutex
	// segs holds the counted segments of every key group, by ref.
	segs map[savepoint.StateRef][]savepoint.Segment
}

// Layout says what the checkpoint is.
func (s *CheckpointSource) Layout() savepoint.Layout { return s.cs.Layout() }

// Metadata is the checkpoint's model, from its canonical part.
func (s *CheckpointSource) Metadata() *savepoint.Metadata { return s.cs.Metadata() }

// Canonical is the checkpoint's canonical part, a stateproc savepoint
// holding everything but the native databases' state: its segments lie in
// its data files, which a rewrite copies as opaque bytes.
func (s *CheckpointSource) Canonical() *snapshotfmt.Reader { return s.cs.canonical }

// Segments returns the segments of ref in kgs: from the canonical index, or,
// for the state of a native database, counted from its entries.
func (s *CheckpointSource) Segments(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) ([]savepoint.Segment, error) {
	if _, ok := s.cs.native[ref.Operator]; !ok {
		return s.cs.canonical.Segments(ctx, ref, kgs)
	}
	s.mu.Lock()
	all, ok := s.segs[ref]
	s.mu.Unlock()
	if !ok {
		var err error
		if all, err = s.cs.Segments(ctx, ref, keygroup.All(s.Metadata().Operators[ref.Operator].MaxParallelism)); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.segs[ref] = all
		s.mu.Unlock()
	}
	var out []savepoint.Segment
	for _, seg := range all {
		if kgs.Contains(seg.KeyGroup) {
			out = append(out, seg)
		}
	}
	return out, nil
}

// Entries iterates the entries of ref in kgs.
func (s *CheckpointSource) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	return &checkpointEntries{EntryIterator: s.cs.Entries(ctx, ref, kgs)}
}

// Close closes the databases and the canonical part and removes the
// materialized files.
func (s *CheckpointSource) Close() error { return s.close() }

// Layout says what an incremental checkpoint is.
func (cs *checkpointSource) Layout() savepoint.Layout {
	return savepoint.Layout{Name: "stateproc incremental checkpoint", Version: chkdir.Version,
		Details: []string{strconv.Itoa(len(cs.native)) + " operators in native Pebble databases"}}
}

// Segments counts the segments of ref in kgs from its entries when a
// native database holds it.
func (cs *checkpointSource) Segments(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) ([]savepoint.Segment, error) {
	if _, ok := cs.native[ref.Operator]; !ok {
		return cs.canonical.Segments(ctx, ref, kgs)
	}
	meta := cs.Metadata()
	if err := meta.Check(ref); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	it := cs.Entries(ctx, ref, kgs)
	defer it.Close()
	var out []savepoint.Segment
	var t *snapshotfmt.Tally
	kg := -1
	end := func() {
		if t != nil {
			st := t.Stats()
			out = append(out, savepoint.Segment{Ref: ref, Stats: st, Length: int64(st.Bytes)})
		}
	}
	for it.Next() {
		e := it.Entry()
		if e.KeyGroup != kg {
			if e.KeyGroup < kg {
				return nil, corruptCheckpoint(fmt.Errorf("engine: %s: key group %d after key group %d", meta.Describe(ref), e.KeyGroup, kg))
			}
			end()
			var err error
			if t, err = snapshotfmt.NewTally(meta, ref, e.KeyGroup); err != nil {
				return nil, corruptCheckpoint(err)
			}
			kg = e.KeyGroup
		}
		if err := t.Add(e); err != nil {
			return nil, corruptCheckpoint(err)
		}
	}
	if err := it.Err(); err != nil {
		return nil, corruptCheckpoint(err)
	}
	end()
	return slices.Clip(out), nil
}

// checkpointEntries marks what goes wrong reading a native database as
// corruption of the checkpoint.
type checkpointEntries struct{ savepoint.EntryIterator }

func (c *checkpointEntries) Err() error { return corruptCheckpoint(c.EntryIterator.Err()) }

// corruptCheckpoint makes an error about the checkpoint's content match
// savepoint.ErrCorrupt, unless it already says what it is: a context's
// end, or bad input of the canonical part.
func corruptCheckpoint(err error) error {
	if err == nil || savepoint.BadInput(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &checkpointError{err}
}

type checkpointError struct{ err error }

func (e *checkpointError) Error() string   { return e.err.Error() }
func (e *checkpointError) Unwrap() []error { return []error{e.err, savepoint.ErrCorrupt} }
