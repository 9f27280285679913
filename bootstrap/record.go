package bootstrap

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
)

// A record is one keyed entry on its way through the sort, in an encoding
// private to one bootstrap and never kept:
//
//	u16 operator; u16 key group; u16 ref
//	timers:  u64 time, sign bit flipped; bytes key; bytes namespace
//	states:  bytes key; bytes namespace; [bytes map key]; [uvarint index]
//	uvarint source; uvarint row
//	value    the rest: a state's stored value, TTL time in front
//
// where bytes is a uvarint length and the bytes. ref numbers the states
// and then the timer services of the operator, as Metadata.Refs lists
// them, so that records sort into the order the savepoint format writes
// segments in: by key group, then ref. The map key is there for map
// states; the index, an element's position plus one (0: none given), for
// list states. Within a ref, records sort by time (timers), key and
// namespace, then map key or index, then by where they came from, which
// keeps list elements without an index in the order they were read and
// makes the order total.

// headerLen is the fixed start of a record.
const headerLen = 6

// shape is what the records of one ref hold.
type shape struct {
	timer, isMap, isList bool
}

const timeSignBit = 1 << 63

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// field splits a length-prefixed field off b. Records are the
// bootstrap's own, but a spill file read back could be damaged: a bad
// length yields what remains, and decode reports it.
func field(b []byte) ([]byte, []byte, bool) {
	if len(b) > 0 && b[0] < 0x80 && int(b[0]) < len(b) {
		n := int(b[0]) + 1
		return b[1:n:n], b[n:], true
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return b, nil, false
	}
	end := k + int(n)
	return b[k:end:end], b[end:], true
}

func number(b []byte) (uint64, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, nil, false
	}
	return n, b[k:], true
}

// compareRecords orders records; shapes[op][ref] says what a ref's hold.
func compareRecords(shapes [][]shape, a, b []byte) int {
	if len(a) < headerLen || len(b) < headerLen {
		return cmp.Compare(len(a), len(b))
	}
	if c := bytes.Compare(a[:headerLen], b[:headerLen]); c != 0 {
		return c
	}
	sh, ok := shapeOf(shapes, a)
	if !ok {
		return 0
	}
	ra, rb := a[headerLen:], b[headerLen:]
	if sh.timer {
		if len(ra) < 8 || len(rb) < 8 {
			return cmp.Compare(len(ra), len(rb))
		}
		if c := bytes.Compare(ra[:8], rb[:8]); c != 0 {
			return c
		}
		ra, rb = ra[8:], rb[8:]
	}
	n := 2
	if sh.isMap {
		n = 3
	}
	for range n {
		var fa, fb []byte
		fa, ra, _ = field(ra)
		fb, rb, _ = field(rb)
		if c := bytes.Compare(fa, fb); c != 0 {
			return c
		}
	}
	// The index of a list state, then the source and the row.
	for range 2 + btoi(sh.isList) {
		var na, nb uint64
		na, ra, _ = number(ra)
		nb, rb, _ = number(rb)
		if c := cmp.Compare(na, nb); c != 0 {
			return c
		}
	}
	return 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func shapeOf(shapes [][]shape, rec []byte) (shape, bool) {
	op, ref := int(binary.BigEndian.Uint16(rec)), int(binary.BigEndian.Uint16(rec[4:]))
	if op >= len(shapes) || ref >= len(shapes[op]) {
		return shape{}, false
	}
	return shapes[op][ref], true
}

// entry is a decoded record.
type entry struct {
	op, kg, ref int
	time        int64
	key, ns, mk []byte
	// index is the list index plus one; 0 when none was given.
	index       uint64
	source, row uint64
	value       []byte
	// identity is the start of the record that says which entry of the
	// savepoint it is: everything before the source.
	identity []byte
}

var errDamaged = errors.New("bootstrap: a spill record is damaged")

func decodeRecord(shapes [][]shape, rec []byte, e *entry) error {
	if len(rec) < headerLen {
		return errDamaged
	}
	sh, ok := shapeOf(shapes, rec)
	if !ok {
		return errDamaged
	}
	e.op, e.kg, e.ref = int(binary.BigEndian.Uint16(rec)), int(binary.BigEndian.Uint16(rec[2:])), int(binary.BigEndian.Uint16(rec[4:]))
	r := rec[headerLen:]
	e.time, e.mk, e.index = 0, nil, 0
	if sh.timer {
		if len(r) < 8 {
			return errDamaged
		}
		e.time = int64(binary.BigEndian.Uint64(r) ^ timeSignBit)
		r = r[8:]
	}
	var okKey, okNs, okMK, okIdx, okSrc, okRow bool
	e.key, r, okKey = field(r)
	e.ns, r, okNs = field(r)
	okMK, okIdx = true, true
	if sh.isMap {
		e.mk, r, okMK = field(r)
	}
	if sh.isList {
		e.index, r, okIdx = number(r)
	}
	e.identity = rec[:len(rec)-len(r)]
	e.source, r, okSrc = number(r)
	e.row, r, okRow = number(r)
	if !(okKey && okNs && okMK && okIdx && okSrc && okRow) {
		return errDamaged
	}
	e.value = r
	return nil
}

// sameEntry reports whether the record decoded into e is the same entry of
// the savepoint as the one before it, whose identity is prev: the same
// value (key, namespace), map entry, timer, or list element at an index
// given for both.
func sameEntry(sh shape, prev []byte, e *entry) bool {
	if sh.isList && e.index == 0 {
		return false
	}
	return bytes.Equal(prev, e.identity)
}
