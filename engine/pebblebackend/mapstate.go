package pebblebackend

import (
	"fmt"

	"github.com/stateproc/stateproc/engine/state"
)

// mapStore keeps one Pebble key per map entry,
// [kg][id][key][namespace][map key], so entries sort in map-key byte order.
type mapStore struct{ s *stateInfo }

// prefix returns [kg][id][key][namespace] in a fresh slice, for iterator
// bounds.
func (m mapStore) prefix(ns []byte) ([]byte, error) {
	p, err := m.s.b.keyPrefix(nil, m.s.id)
	if err != nil {
		return nil, err
	}
	return appendEscaped(p, ns), nil
}

// entryKey builds the key of one entry in the backend's key scratch.
func (m mapStore) entryKey(ns []byte, mapKey any) ([]byte, error) {
	b := m.s.b
	k, err := b.keyPrefix(b.kbuf[:0], m.s.id)
	if err != nil {
		return nil, err
	}
	k = appendEscaped(k, ns)
	if b.mkbuf, err = m.s.spec.MapKey.AppendAny(b.mkbuf[:0], mapKey); err != nil {
		return nil, fmt.Errorf("pebblebackend: state %q: map key: %w", m.s.spec.Name, err)
	}
	b.kbuf = appendEscaped(k, b.mkbuf)
	return b.kbuf, nil
}

func (m mapStore) Get(ns []byte, mapKey any) (state.Cell, bool, error) {
	k, err := m.entryKey(ns, mapKey)
	if err != nil {
		return state.Cell{}, false, err
	}
	var c state.Cell
	ok, err := m.s.b.get(k, func(stored []byte) (err error) {
		c, err = m.s.decodeCell(stored)
		return err
	})
	return c, ok && err == nil, err
}

func (m mapStore) Put(ns []byte, mapKey any, c state.Cell) error {
	k, err := m.entryKey(ns, mapKey)
	if err != nil {
		return err
	}
	b := m.s.b
	if b.vbuf, err = m.s.appendCell(b.vbuf[:0], c); err != nil {
		return err
	}
	if err := b.set(k, b.vbuf); err != nil {
		return err
	}
	return b.commitIfFull()
}

func (m mapStore) Delete(ns []byte, mapKey any) error {
	k, err := m.entryKey(ns, mapKey)
	if err != nil {
		return err
	}
	if err := m.s.b.del(k); err != nil {
		return err
	}
	return m.s.b.commitIfFull()
}

// Range walks the entries with an iterator, so memory does not grow with
// the size of the map.
func (m mapStore) Range(ns []byte, fn func(mapKey any, c state.Cell) bool) (err error) {
	p, err := m.prefix(ns)
	if err != nil {
		return err
	}
	it, err := m.s.b.iter(p)
	if err != nil {
		return err
	}
	defer m.s.b.closeIter(it, &err)
	var raw []byte
	for it.First(); it.Valid(); it.Next() {
		var rest []byte
		raw, rest, err = readEscaped(raw[:0], it.Key()[len(p):])
		if err == nil && len(rest) != 0 {
			err = fmt.Errorf("%w: %d bytes after the map key", errKey, len(rest))
		}
		if err != nil {
			return err
		}
		mk, err := m.s.spec.MapKey.DecodeAny(raw)
		if err != nil {
			return fmt.Errorf("pebblebackend: state %q: map key: %w", m.s.spec.Name, err)
		}
		c, err := m.s.decodeCell(it.Value())
		if err != nil {
			return err
		}
		if !fn(mk, c) {
			break
		}
	}
	return it.Error()
}

func (m mapStore) IsEmpty(ns []byte) (empty bool, err error) {
	p, err := m.prefix(ns)
	if err != nil {
		return false, err
	}
	it, err := m.s.b.iter(p)
	if err != nil {
		return false, err
	}
	defer m.s.b.closeIter(it, &err)
	return !it.First(), it.Error()
}

// Clear deletes entry by entry, for the reason given at listStore.Replace.
func (m mapStore) Clear(ns []byte) error {
	p, err := m.prefix(ns)
	if err != nil {
		return err
	}
	return m.s.b.deleteRange(p, prefixEnd(p))
}
