package rescale

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
)

// The spill encoding, private to one rescale and never kept: a file is a
// sequence of records, each a group header or an item.
//
//	group := 0x00 u16 key group; uvarint ref; [u64 time]; bytes key; bytes namespace
//	item  := 0x01 [bytes map key] bytes value
//
// A key group is below 32768, so it takes two bytes, big-endian, which is
// cheaper to read than a varint. The time (a timer's, sign bit flipped as in
// the format) is present for
// timer services only, the map key for map states only. A group is the
// header followed by its items: the entries of one (key, namespace) of one
// state in one key group, or one timer (a header alone). Keeping the key
// out of the items keeps spill files close to the input's size.
const (
	tagGroup byte = 0
	tagItem  byte = 1
)

const timerTimeBits = 1 << 63

// refShape is what the records of one state or timer service look like. A
// spill ref is an index into the shapes of an operator, in the order of
// Metadata.Refs: the order of the segments of a key group.
type refShape struct {
	ref          savepoint.StateRef
	timer, isMap bool
}

func shapes(m *savepoint.Metadata, op int) []refShape {
	var s []refShape
	for _, ref := range m.Refs(op) {
		ks := m.KeyedState(ref)
		s = append(s, refShape{ref: ref, timer: ref.Timer, isMap: ks != nil && ks.Kind == savepoint.Map})
	}
	return s
}

// spillRef returns the spill ref of ref, or -1 when the operator has no
// such state.
func spillRef(shapes []refShape, ref savepoint.StateRef) int {
	for i := range shapes {
		if shapes[i].ref == ref {
			return i
		}
	}
	return -1
}

// header is a decoded group header. Its slices alias whatever it was
// decoded from.
type header struct {
	kg, ref int
	time    int64
	key, ns []byte
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func appendHeader(b []byte, h *header, timer bool) []byte {
	b = append(b, tagGroup)
	b = binary.BigEndian.AppendUint16(b, uint16(h.kg))
	b = binary.AppendUvarint(b, uint64(h.ref))
	if timer {
		b = binary.BigEndian.AppendUint64(b, uint64(h.time)^timerTimeBits)
	}
	b = appendBytes(b, h.key)
	return appendBytes(b, h.ns)
}

func appendItem(b []byte, isMap bool, mk, v []byte) []byte {
	b = append(b, tagItem)
	if isMap {
		b = appendBytes(b, mk)
	}
	return appendBytes(b, v)
}

// errShort means a record continues beyond the bytes at hand.
var errShort = errors.New("rescale: record continues beyond the buffer")

// spillDecoder decodes records from a buffer.
type spillDecoder struct {
	buf    []byte
	off    int
	shapes []refShape
}

func (d *spillDecoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.buf[d.off:])
	switch {
	case n == 0:
		return 0, errShort
	case n < 0:
		return 0, errors.New("rescale: spill file: bad varint")
	}
	d.off += n
	return v, nil
}

func (d *spillDecoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.buf)-d.off) {
		return nil, errShort
	}
	b := d.buf[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return b, nil
}

// short reads a byte string in the common case, a one-byte length that
// fits in what remains, and is small enough to inline into the loops that
// call it for every entry; otherwise it reads nothing and returns false,
// and the caller calls bytes.
func (d *spillDecoder) short() ([]byte, bool) {
	off := d.off
	if off >= len(d.buf) {
		return nil, false
	}
	n := int(d.buf[off])
	if n >= 0x80 || n >= len(d.buf)-off {
		return nil, false
	}
	d.off = off + 1 + n
	return d.buf[off+1 : off+1+n : off+1+n], true
}

// header decodes a group header after its tag.
func (d *spillDecoder) header(h *header) error {
	if len(d.buf)-d.off < 3 {
		return errShort
	}
	kg := binary.BigEndian.Uint16(d.buf[d.off:])
	d.off += 2
	// A ref takes one byte unless an operator has over 127 states.
	ref := uint64(d.buf[d.off])
	if ref < 0x80 {
		d.off++
	} else {
		var err error
		if ref, err = d.uvarint(); err != nil {
			return err
		}
	}
	if ref >= uint64(len(d.shapes)) {
		return fmt.Errorf("rescale: spill file: ref %d out of range", ref)
	}
	h.kg, h.ref, h.time = int(kg), int(ref), 0
	if d.shapes[ref].timer {
		if len(d.buf)-d.off < 8 {
			return errShort
		}
		h.time = int64(binary.BigEndian.Uint64(d.buf[d.off:]) ^ timerTimeBits)
		d.off += 8
	}
	var ok bool
	var err error
	if h.key, ok = d.short(); !ok {
		if h.key, err = d.bytes(); err != nil {
			return err
		}
	}
	if h.ns, ok = d.short(); !ok {
		h.ns, err = d.bytes()
	}
	return err
}

// item decodes an item after its tag; mk is nil unless isMap.
func (d *spillDecoder) item(isMap bool) (mk, v []byte, err error) {
	if isMap {
		var ok bool
		if mk, ok = d.short(); !ok {
			if mk, err = d.bytes(); err != nil {
				return nil, nil, err
			}
		}
	}
	if v, ok := d.short(); ok {
		return mk, v, nil
	}
	v, err = d.bytes()
	return mk, v, err
}
