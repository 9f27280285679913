package bootstrap

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// A keyed entry goes through the sort as a record of extsort, in an
// encoding private to one bootstrap and never kept. Its bucket is a range
// of key groups of one operator; its class is the key group and the ref:
//
//	class  u16 key group, u16 ref
//	key    timers: u64 time, sign bit flipped; esc key; esc namespace
//	       states: esc key; esc namespace; [esc map key]; [u64 index]
//	       then u64 where: the source << 40 | the row
//	value  a state's stored value, its TTL time in front
//
// where numbers are big-endian and esc is the bytes with each 0x00 written
// as 0x00 0xFF, ended by 0x00 0x01: comparing two encoded keys as bytes
// compares their fields in turn, so records sort into the order the
// savepoint format writes entries in. ref numbers the states and then the
// timer services of the operator, as Metadata.Refs lists them, so that
// classes sort into the order of segments: by key group, then ref. The
// map key is there for map states; the index, an element's position plus
// one (0: none given), for list states. Within a ref, records sort by time
// (timers), key and namespace, then map key or index, then by where they
// came from, which keeps list elements without an index in the order they
// were read and makes the order total.

// shape is what the records of one ref hold.
type shape struct {
	timer, isMap, isList bool
}

const (
	timeSignBit = 1 << 63
	// whereLen is the source and row at the end of a record's key, in
	// one number of rowBits for the row and the rest for the source.
	whereLen = 8
	rowBits  = 40
	// maxSources and maxRow bound what where holds.
	maxSources = 1 << (64 - rowBits)
	maxRow     = 1<<rowBits - 1
)

func class(kg, ref int) uint32 { return uint32(kg)<<16 | uint32(ref) }

// appendEsc appends p escaped, so that bytes order is kept across fields.
func appendEsc(b, p []byte) []byte {
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0)
		if i < 0 {
			b = append(b, p...)
			break
		}
		b = append(b, p[:i]...)
		b = append(b, 0, 0xFF)
		p = p[i+1:]
	}
	return append(b, 0, 1)
}

// unesc splits an escaped field off b into into (or, with no 0x00 in it,
// a slice of b). Records are the bootstrap's own, but a spill file read
// back could be damaged: a bad escape reports false.
func unesc(b, into []byte) (field, rest, buf []byte, ok bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 || i+1 >= len(b) {
		return nil, nil, into, false
	}
	if b[i+1] == 1 {
		return b[:i:i], b[i+2:], into, true
	}
	into = into[:0]
	for {
		if i < 0 || i+1 >= len(b) {
			return nil, nil, into, false
		}
		into = append(into, b[:i]...)
		switch b[i+1] {
		case 1:
			return into, b[i+2:], into, true
		case 0xFF:
			into = append(into, 0)
		default:
			return nil, nil, into, false
		}
		b = b[i+2:]
		i = bytes.IndexByte(b, 0)
	}
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
	// identity is the part of the record's key that says which entry of
	// the savepoint it is: everything before the source.
	identity []byte
	// Buffers for fields that held a 0x00.
	kbuf, nbuf, mbuf []byte
}

var errDamaged = errors.New("bootstrap: a spill record is damaged")

// decodeRecord decodes a record of operator op; sh is its ref's shape.
func decodeRecord(op int, sh shape, cls uint32, key, value []byte, e *entry) error {
	e.op, e.kg, e.ref = op, int(cls>>16), int(cls&0xFFFF)
	if len(key) < whereLen {
		return errDamaged
	}
	r := key[:len(key)-whereLen]
	e.identity = r
	where := binary.BigEndian.Uint64(key[len(r):])
	e.source, e.row = where>>rowBits, where&maxRow
	e.time, e.mk, e.index = 0, nil, 0
	if sh.timer {
		if len(r) < 8 {
			return errDamaged
		}
		e.time = int64(binary.BigEndian.Uint64(r) ^ timeSignBit)
		r = r[8:]
	}
	var ok bool
	if e.key, r, e.kbuf, ok = unesc(r, e.kbuf); !ok {
		return errDamaged
	}
	if e.ns, r, e.nbuf, ok = unesc(r, e.nbuf); !ok {
		return errDamaged
	}
	if sh.isMap {
		if e.mk, r, e.mbuf, ok = unesc(r, e.mbuf); !ok {
			return errDamaged
		}
	}
	if sh.isList {
		if len(r) < 8 {
			return errDamaged
		}
		e.index, r = binary.BigEndian.Uint64(r), r[8:]
	}
	if len(r) != 0 {
		return errDamaged
	}
	e.value = value
	return nil
}

// sameEntry reports whether the record decoded into e is the same entry of
// the savepoint as the one before it, of the same class, whose identity is
// prev: the same value (key, namespace), map entry, timer, or list element
// at an index given for both.
func sameEntry(sh shape, prev []byte, e *entry) bool {
	if sh.isList && e.index == 0 {
		return false
	}
	return bytes.Equal(prev, e.identity)
}
