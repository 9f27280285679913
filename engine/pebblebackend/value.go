package pebblebackend

import "github.com/stateproc/stateproc/engine/state"

// valueStore keeps one Pebble key per (key, namespace):
// [kg][id][key][namespace].
type valueStore struct{ s *stateInfo }

func (v valueStore) dbKey(ns []byte) ([]byte, error) {
	b := v.s.b
	k, err := b.keyPrefix(b.kbuf[:0], v.s.id)
	if err != nil {
		return nil, err
	}
	b.kbuf = appendEscaped(k, ns)
	return b.kbuf, nil
}

func (v valueStore) Get(ns []byte) (state.Cell, bool, error) {
	k, err := v.dbKey(ns)
	if err != nil {
		return state.Cell{}, false, err
	}
	var c state.Cell
	ok, err := v.s.b.get(k, func(stored []byte) (err error) {
		c, err = v.s.decodeCell(stored)
		return err
	})
	return c, ok && err == nil, err
}

func (v valueStore) Put(ns []byte, c state.Cell) error {
	k, err := v.dbKey(ns)
	if err != nil {
		return err
	}
	b := v.s.b
	if b.vbuf, err = v.s.appendCell(b.vbuf[:0], c); err != nil {
		return err
	}
	if err := b.set(k, b.vbuf); err != nil {
		return err
	}
	return b.commitIfFull()
}

func (v valueStore) Delete(ns []byte) error {
	k, err := v.dbKey(ns)
	if err != nil {
		return err
	}
	if err := v.s.b.del(k); err != nil {
		return err
	}
	return v.s.b.commitIfFull()
}
