package rescale

import (
	"fmt"

	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// segmentSink writes sorted groups as segments of one output data file: a
// new segment at every change of (key group, ref), which the sort order
// makes ascending, as the format and the engine's layout want.
type segmentSink struct {
	f      *rewrite.DataFile
	shapes []refShape
	sw     *rewrite.SegmentWriter
	kg     int
	ref    int
	e      savepoint.Entry
	// newRecord is set by a state group's header until its first item.
	newRecord bool
	// entries counts what was written, by ref.
	entries []uint64
}

func newSegmentSink(f *rewrite.DataFile, shapes []refShape) *segmentSink {
	return &segmentSink{f: f, shapes: shapes, entries: make([]uint64, len(shapes))}
}

func (s *segmentSink) group(h *header) error {
	if s.sw == nil || h.kg != s.kg || h.ref != s.ref {
		if err := s.close(); err != nil {
			return err
		}
		sw, err := s.f.Segment(s.shapes[h.ref].ref, h.kg)
		if err != nil {
			return err
		}
		s.sw, s.kg, s.ref = sw, h.kg, h.ref
	}
	s.e = savepoint.Entry{KeyGroup: h.kg, Key: h.key, Namespace: h.ns}
	if !s.shapes[h.ref].timer {
		s.newRecord = true
		return nil
	}
	s.e.Timestamp = h.time
	if err := s.sw.Add(&s.e); err != nil {
		return fmt.Errorf("rescale: %w", err)
	}
	s.entries[s.ref]++
	return nil
}

// item appends the item as it was framed in the input: the sort has put
// the groups in order, and a group's items are in the order the input
// savepoint's reader checked, so only a group's first item has its key
// compared.
func (s *segmentSink) item(framed, v []byte) error {
	if err := s.sw.AppendFramed(s.newRecord, s.e.Key, s.e.Namespace, framed, v); err != nil {
		return fmt.Errorf("rescale: %w", err)
	}
	s.newRecord = false
	s.entries[s.ref]++
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
