package heapbackend

import (
	"fmt"
	"slices"
	"sort"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/savepoint"
)

// mapStore backs map states. The entries of one (key, namespace) are a slice
// sorted by serialized map key: Range and snapshots need that order anyway,
// lookups are binary searches, and incremental cleanup can walk it. Inserting
// a new map key moves the entries after it, which is cheap for the maps keyed
// state usually holds (tens to thousands of entries).
type mapStore struct {
	*table[[]mapEntry]
	kb []byte // scratch: the serialized map key
}

type mapEntry struct {
	k    string // serialized map key
	key  any    // the map key as handed in or restored
	cell state.Cell
}

var (
	_ state.RawMap             = (*mapStore)(nil)
	_ state.IncrementalCleaner = (*mapStore)(nil)
)

// search returns where the map key k is or would be inserted.
func search(es []mapEntry, k []byte) (int, bool) {
	i := sort.Search(len(es), func(i int) bool { return es[i].k >= string(k) })
	return i, i < len(es) && es[i].k == string(k)
}

// locate serializes mapKey and finds the record of (current key, ns) in the
// current group gi; p is nil when the record does not exist.
func (s *mapStore) locate(ns []byte, mapKey any) (gi int, p *[]mapEntry, err error) {
	if gi, err = s.current(ns); err != nil {
		return 0, nil, err
	}
	if s.kb, err = s.table.spec.MapKey.AppendAny(s.kb[:0], mapKey); err != nil {
		return 0, nil, fmt.Errorf("heapbackend: state %q: map key: %w", s.table.spec.Name, err)
	}
	return gi, s.find(gi, s.id), nil
}

func (s *mapStore) Get(ns []byte, mapKey any) (state.Cell, bool, error) {
	_, p, err := s.locate(ns, mapKey)
	if err != nil || p == nil {
		return state.Cell{}, false, err
	}
	if i, ok := search(*p, s.kb); ok {
		return (*p)[i].cell, true, nil
	}
	return state.Cell{}, false, nil
}

func (s *mapStore) Put(ns []byte, mapKey any, c state.Cell) error {
	gi, p, err := s.locate(ns, mapKey)
	if err != nil {
		return err
	}
	if p == nil {
		p = s.get(gi, s.id)
	}
	put(p, s.kb, mapKey, c)
	return nil
}

// put sets the entry of the serialized map key k, copying k when it is new.
func put(p *[]mapEntry, k []byte, key any, c state.Cell) {
	es := *p
	// Entries usually arrive in order on restore: append without searching.
	if n := len(es); n == 0 || es[n-1].k < string(k) {
		*p = append(es, mapEntry{k: string(k), key: key, cell: c})
		return
	}
	i, ok := search(es, k)
	if ok {
		es[i].key, es[i].cell = key, c
		return
	}
	*p = slices.Insert(es, i, mapEntry{k: string(k), key: key, cell: c})
}

func (s *mapStore) Delete(ns []byte, mapKey any) error {
	gi, p, err := s.locate(ns, mapKey)
	if err != nil || p == nil {
		return err
	}
	if i, ok := search(*p, s.kb); ok {
		*p = slices.Delete(*p, i, i+1)
		if len(*p) == 0 {
			s.delete(gi, s.id)
		}
	}
	return nil
}

func (s *mapStore) Range(ns []byte, fn func(mapKey any, c state.Cell) bool) error {
	gi, err := s.current(ns)
	if err != nil {
		return err
	}
	if p := s.find(gi, s.id); p != nil {
		for _, e := range *p {
			if !fn(e.key, e.cell) {
				break
			}
		}
	}
	return nil
}

func (s *mapStore) IsEmpty(ns []byte) (bool, error) {
	gi, err := s.current(ns)
	if err != nil {
		return false, err
	}
	return s.find(gi, s.id) == nil, nil
}

func (s *mapStore) Clear(ns []byte) error {
	gi, err := s.current(ns)
	if err != nil {
		return err
	}
	s.delete(gi, s.id)
	return nil
}

// CleanupIncrementally counts every entry of a map it examines.
func (s *mapStore) CleanupIncrementally(n int, expired func(lastModified int64) bool) {
	s.cleanup(n, func(p *[]mapEntry) (int, bool) {
		examined := len(*p)
		*p = slices.DeleteFunc(*p, func(e mapEntry) bool { return expired(e.cell.Timestamp) })
		return examined, len(*p) == 0
	})
}

func (s *mapStore) snapshot(w *entryWriter, gi int) error {
	spec := s.table.spec
	for _, r := range s.sorted(gi) {
		w.record(r.id)
		for _, e := range r.p {
			if w.drops(spec, e.cell) {
				continue
			}
			if err := w.add(spec, e.k, e.cell); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *mapStore) restore(gi int, e *savepoint.Entry, c state.Cell) error {
	key, err := s.table.spec.MapKey.DecodeAny(e.MapKey)
	if err != nil {
		return fmt.Errorf("map key: %w", err)
	}
	s.at(e.Key, e.Namespace)
	put(s.get(gi, s.id), e.MapKey, key, c)
	return nil
}
