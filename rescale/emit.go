package rescale

import (
	"fmt"

	"github.com/stateproc/stateproc/internal/extsort"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// segmentSink writes sorted spill records as segments of one output data
// file: a new segment at every change of (key group, ref), which the sort
// order makes ascending, as the format and the engine's layout want.
type segmentSink struct {
	f      *rewrite.DataFile
	shapes []refShape
	// kgs is the bucket being written: a record of another key group is
	// refused.
	kgs keygroup.Range
	sw  *rewrite.SegmentWriter
	kg  int
	ref int
	e   savepoint.Entry
	// entries counts what was written, by ref.
	entries []uint64
}

func newSegmentSink(f *rewrite.DataFile, shapes []refShape) *segmentSink {
	return &segmentSink{f: f, shapes: shapes, entries: make([]uint64, len(shapes))}
}

// record writes the entries of one spill record. A state's items are
// appended as the input framed them: the sort has put the records in
// order, and a record's items are in the order the input savepoint's
// reader checked, so only a record's key and namespace are compared (the
// pieces of one long group compare equal and continue it).
func (s *segmentSink) record(r *extsort.Record) error {
	kg, ref := int(r.Class)/len(s.shapes), int(r.Class)%len(s.shapes)
	if !s.kgs.Contains(kg) {
		return fmt.Errorf("rescale: spill record of key group %d outside the bucket's %v", kg, s.kgs)
	}
	if s.sw == nil || kg != s.kg || ref != s.ref {
		if err := s.close(); err != nil {
			return err
		}
		sw, err := s.f.Segment(s.shapes[ref].ref, kg)
		if err != nil {
			return err
		}
		s.sw, s.kg, s.ref = sw, kg, ref
	}
	if s.shapes[ref].timer {
		t, key, err := splitTimerKey(r.Key)
		if err != nil {
			return err
		}
		s.e = savepoint.Entry{KeyGroup: kg, Key: key, Namespace: r.Sub, Timestamp: t}
		if err := s.sw.Add(&s.e); err != nil {
			return fmt.Errorf("rescale: %w", err)
		}
		s.entries[ref]++
		return nil
	}
	n, err := s.sw.AppendItems(r.Key, r.Sub, r.Value)
	s.entries[ref] += uint64(n)
	if err != nil {
		return fmt.Errorf("rescale: %w", err)
	}
	return nil
}

// close ends the open segment, if any.
func (s *segmentSink) close() error {
	if s.sw == nil {
		return nil
	}
	err := s.sw.Close()
	s.sw = nil
	return err
}
