package heapbackend

import (
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/savepoint"
)

// valueStore backs value, reducing and aggregating states: one cell per
// (key, namespace).
type valueStore struct {
	*table[state.Cell]
}

var (
	_ state.RawValue           = (*valueStore)(nil)
	_ state.IncrementalCleaner = (*valueStore)(nil)
)

func (s *valueStore) Get(ns []byte) (state.Cell, bool, error) {
	gi, err := s.current(ns)
	if err != nil {
		return state.Cell{}, false, err
	}
	if p := s.find(gi, s.id); p != nil {
		return *p, true, nil
	}
	return state.Cell{}, false, nil
}

func (s *valueStore) Put(ns []byte, c state.Cell) error {
	gi, err := s.current(ns)
	if err != nil {
		return err
	}
	*s.get(gi, s.id) = c
	return nil
}

func (s *valueStore) Delete(ns []byte) error {
	gi, err := s.current(ns)
	if err != nil {
		return err
	}
	s.delete(gi, s.id)
	return nil
}

func (s *valueStore) CleanupIncrementally(n int, expired func(lastModified int64) bool) {
	s.cleanup(n, func(c *state.Cell) (int, bool) { return 1, expired(c.Timestamp) })
}

func (s *valueStore) snapshot(w *entryWriter, gi int) error {
	for _, r := range s.sorted(gi) {
		if w.drops(s.table.spec, r.p) {
			continue
		}
		w.record(r.id)
		if err := w.add(s.table.spec, "", r.p); err != nil {
			return err
		}
	}
	return nil
}

func (s *valueStore) restore(gi int, e *savepoint.Entry, c state.Cell) error {
	s.at(e.Key, e.Namespace)
	*s.get(gi, s.id) = c
	return nil
}
