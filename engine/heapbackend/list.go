package heapbackend

import (
	"slices"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/savepoint"
)

// listStore backs list states: the cells of one (key, namespace) in list
// order. An empty list is no record at all.
type listStore struct {
	*table[[]state.Cell]
}

var (
	_ state.RawList            = (*listStore)(nil)
	_ state.IncrementalCleaner = (*listStore)(nil)
)

// Get returns a copy, so the caller cannot change the stored list.
func (s *listStore) Get(ns []byte) ([]state.Cell, error) {
	gi, err := s.current(ns)
	if err != nil {
		return nil, err
	}
	if p := s.find(gi, s.id); p != nil {
		return slices.Clone(*p), nil
	}
	return nil, nil
}

func (s *listStore) Append(ns []byte, cells ...state.Cell) error {
	gi, err := s.current(ns)
	if err != nil || len(cells) == 0 {
		return err
	}
	p := s.get(gi, s.id)
	*p = append(*p, cells...)
	return nil
}

func (s *listStore) Replace(ns []byte, cells []state.Cell) error {
	gi, err := s.current(ns)
	if err != nil {
		return err
	}
	if len(cells) == 0 {
		s.delete(gi, s.id)
		return nil
	}
	*s.get(gi, s.id) = slices.Clone(cells)
	return nil
}

// CleanupIncrementally counts every element of a list it examines.
func (s *listStore) CleanupIncrementally(n int, expired func(lastModified int64) bool) {
	s.cleanup(n, func(l *[]state.Cell) (int, bool) {
		examined := len(*l)
		*l = slices.DeleteFunc(*l, func(c state.Cell) bool { return expired(c.Timestamp) })
		return examined, len(*l) == 0
	})
}

func (s *listStore) snapshot(w *entryWriter, gi int) error {
	spec := s.table.spec
	for _, r := range s.sorted(gi) {
		w.record(r.id)
		for _, c := range r.p {
			if w.drops(spec, c) {
				continue
			}
			if err := w.add(spec, "", c); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *listStore) restore(gi int, e *savepoint.Entry, c state.Cell) error {
	s.at(e.Key, e.Namespace)
	p := s.get(gi, s.id)
	*p = append(*p, c)
	return nil
}
