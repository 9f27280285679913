package rescale

import (
	"encoding/binary"
	"errors"

	"github.com/stateproc/stateproc/savepoint"
)

// The partition phase spills its entries as internal/extsort records, one
// per group: the entries of one (key, namespace) of one state in one new
// key group, or one timer.
//
//	class  = new key group × the operator's refs + ref
//	key    = [u64 time] key
//	subkey = namespace
//	value  = the group's items, each framed as the format frames it:
//	         [bytes map key] bytes value
//
// The time (a timer's, sign bit flipped as in the format, so that bytes
// order as times do) leads the key of a timer only: it is fixed-width, so
// the sorter's order by key bytes is the order by time, then key, that
// timers take. A long group is spilled as several records, pieces of at
// most pieceLimit bytes of items: they sort equal and the sorter keeps
// their order. Keeping the key out of the items keeps spill files close to
// the input's size.
const timerTimeBits = 1 << 63

// pieceLimit bounds the items of one spill record, so that a list of
// millions of elements needs no buffer of its size. A variable so that a
// test can cut every group into pieces.
var pieceLimit = 256 << 10

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

// spillClass is the class of the records of ref in new key group kg.
func spillClass(shapes []refShape, kg, ref int) uint32 {
	return uint32(kg*len(shapes) + ref)
}

// appendTimerKey appends a timer's spill key.
func appendTimerKey(b []byte, time int64, key []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(time)^timerTimeBits)
	return append(b, key...)
}

// splitTimerKey undoes appendTimerKey.
func splitTimerKey(k []byte) (time int64, key []byte, err error) {
	if len(k) < 8 {
		return 0, nil, errors.New("rescale: spill record: a timer's key without its time")
	}
	return int64(binary.BigEndian.Uint64(k) ^ timerTimeBits), k[8:], nil
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// appendItem appends a state entry's item as the format frames it.
func appendItem(b []byte, isMap bool, mk, v []byte) []byte {
	if isMap {
		b = appendBytes(b, mk)
	}
	return appendBytes(b, v)
}
