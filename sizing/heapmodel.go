package sizing

import (
	"encoding/binary"
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// The heap model: the live bytes engine/heapbackend holds for a state, from
// the sizes of its serialized keys and values. It follows the backend's
// layout (see heapbackend's table.go, value.go, list.go, mapstore.go and
// timers.go) and rounds every allocation as Go's allocator does (alloc.go).
//
// Per key group and state, a table: a group struct (32 B), a map from
// record id to position (slots of string + int, 24 B) and a slice of
// records (id string + payload, 40 B), both grown as Go grows them.
//
// Per record, that is per (key, namespace): its id, a string of the escaped
// key (each 0x00 doubled), a 2-byte terminator and the namespace bytes.
//
// Per entry, by kind:
//
//	value, reducing, aggregating  box(value)
//	list                          24 B cell in the record's slice + box(value)
//	map                           56 B entry in the record's slice + the serialized map key
//	                              as a string + box(map key) + box(value)
//	timer                         48 B timer + its id string (8 B time, escaped key,
//	                              terminator, namespace) + 24 B map slot per key group
//	                              + 8 B in the subtask's timer queue, one slice grown as Go
//	                              grows it
//
// and the record's slices grow by doubling, so their share per entry
// depends on the entries per record. box(v) is what the value costs inside
// an interface: nothing for bools and for integers below 256 (the runtime
// keeps those), a 16-byte tiny block for other numbers (alloc.go says why
// a block and not 8 bytes), a 16-byte header plus the bytes for a string,
// 24 B plus the bytes for a byte slice, 24 B for a time, and for Avro the
// generated struct plus what it holds out of line (avro.go).
//
// A TTL costs nothing extra on the heap: the last-modified time lives in
// the cell beside every value.
//
// What is not modelled: the Go runtime's own overhead (stacks, the
// collector's metadata, fragmentation of spans) and the headroom the
// collector needs, which the recommendation adds as GOGC.
const (
	recordSize   = 40 // heapbackend record: id string + Cell or slice header
	cellSize     = 24 // state.Cell: interface + int64 timestamp
	mapEntrySize = 56 // heapbackend mapEntry: string + interface + Cell
	groupSize    = 32 // heapbackend group: map pointer + slice header
	slotSize     = 24 // map[string]int and map[string]*timer slots
	timerSize    = 40 // heapbackend timer: id string + three ints
	idTerminator = 2
	timeSize     = 8
)

// kindTimers is the kind of a timer service in sizing's reports, beside the
// state kinds.
const kindTimers = "timers"

// heapShape computes the model for one state or timer service.
type heapShape struct {
	kind   string
	mapKey boxer
	value  boxer
}

// boxer is box(v) for one serializer: the heap bytes of a value decoded
// from v and held in an interface.
type boxer func(v []byte) float64

func newHeapShape(kind string, mapKey, value *serializers.Snapshot) (*heapShape, error) {
	h := &heapShape{kind: kind}
	var err error
	if mapKey != nil {
		if h.mapKey, err = boxerFor(*mapKey, 0); err != nil {
			return nil, err
		}
	}
	if value != nil {
		if h.value, err = boxerFor(*value, 0); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// record is the heap bytes of one record's id: the escaped key, its
// terminator and the namespace. Timers keep no records.
func (h *heapShape) record(escapedKey, namespace int) float64 {
	if h.kind == kindTimers {
		return 0
	}
	return alloc(escapedKey+idTerminator+namespace, false)
}

// entry is the heap bytes of one entry besides its share of the record's
// slice. value is the stored value without its TTL timestamp.
func (h *heapShape) entry(escapedKey, namespace int, mapKey, value []byte) float64 {
	switch h.kind {
	case kindTimers:
		return alloc(timerSize, true) + alloc(timeSize+escapedKey+idTerminator+namespace, false)
	case savepoint.Map.String():
		return alloc(len(mapKey), false) + h.mapKey(mapKey) + h.value(value)
	}
	return h.value(value)
}

// collection is the heap bytes of the slice of a record holding n list
// elements or map entries.
func (h *heapShape) collection(n int) float64 {
	switch h.kind {
	case savepoint.List.String():
		return sliceBytes(n, cellSize, true)
	case savepoint.Map.String():
		return sliceBytes(n, mapEntrySize, true)
	}
	return 0
}

// container is the heap bytes of one key group's table of a state holding
// records records (or timers). It exists for every key group a subtask
// owns, even an empty one.
func (h *heapShape) container(records float64) float64 {
	if h.kind == kindTimers {
		return ptrSize + mapBytes(records, slotSize)
	}
	return groupSize + mapBytes(records, slotSize) + sliceBytes(int(records+0.5), recordSize, true)
}

// subtask is the heap bytes a subtask holds once for all its key groups:
// the queue of a timer service holding timers timers.
func (h *heapShape) subtask(timers float64) float64 {
	if h.kind != kindTimers {
		return 0
	}
	return sliceBytes(int(timers+0.5), ptrSize, true)
}

// noBox is the boxer of a shape whose heap figures come from overhead
// factors instead.
func noBox([]byte) float64 { return 0 }

// boxerFor builds box(v) for a serializer snapshot.
func boxerFor(s serializers.Snapshot, depth int) (boxer, error) {
	if depth > 32 {
		return nil, fmt.Errorf("serializer nests deeper than 32")
	}
	switch s.Kind {
	case serializers.KindBool, serializers.KindVoid:
		return func([]byte) float64 { return 0 }, nil
	case serializers.KindInt32, serializers.KindFloat32, serializers.KindInt64, serializers.KindFloat64:
		return boxNumber, nil
	case serializers.KindTimestamp:
		return func([]byte) float64 { return alloc(24, true) }, nil
	case serializers.KindWindow:
		return func([]byte) float64 { return alloc(16, false) }, nil
	case serializers.KindString:
		return func(v []byte) float64 {
			if len(v) == 0 {
				return 0
			}
			return alloc(16, true) + alloc(len(v), false)
		}, nil
	case serializers.KindBytes:
		return func(v []byte) float64 { return alloc(24, true) + alloc(len(v), false) }, nil
	case serializers.KindAvro:
		return avroBoxer(s.Schema)
	case serializers.KindNullable, serializers.KindTTL:
		elem, err := boxerFor(s.Args[0], depth+1)
		if err != nil {
			return nil, err
		}
		skip := 1
		if s.Kind == serializers.KindTTL {
			skip = timeSize
		}
		return func(v []byte) float64 {
			if len(v) < skip || (s.Kind == serializers.KindNullable && v[0] == 0) {
				return 0
			}
			return elem(v[skip:])
		}, nil
	case serializers.KindList:
		elem, err := boxerFor(s.Args[0], depth+1)
		if err != nil {
			return nil, err
		}
		// Restored lists are []any: a 16-byte interface per element.
		return func(v []byte) float64 {
			n, total := 0, alloc(24, true)
			eachFramed(v, 1, func(parts [][]byte) { n++; total += elem(parts[0]) })
			return total + sliceBytes(n, 16, true)
		}, nil
	case serializers.KindMap:
		key, err := boxerFor(s.Args[0], depth+1)
		if err != nil {
			return nil, err
		}
		val, err := boxerFor(s.Args[1], depth+1)
		if err != nil {
			return nil, err
		}
		// Restored maps are []MapEntry: two interfaces per entry.
		return func(v []byte) float64 {
			n, total := 0, alloc(24, true)
			eachFramed(v, 2, func(parts [][]byte) { n++; total += key(parts[0]) + val(parts[1]) })
			return total + sliceBytes(n, 32, true)
		}, nil
	}
	return func(v []byte) float64 { return alloc(len(v), false) }, nil
}

// boxNumber: the runtime boxes integers below 256 without allocating, and
// any other 4- or 8-byte number in a tiny allocation.
func boxNumber(v []byte) float64 {
	var u uint64
	for _, b := range v {
		u = u<<8 | uint64(b)
	}
	if u < 256 {
		return 0
	}
	return alloc(len(v), false)
}

// eachFramed walks the encoding of a list (per item one length-prefixed
// part) or map (two): a count, then the parts. It stops quietly at
// anything malformed; the reader has already verified the savepoint, and a
// model needs no error.
func eachFramed(v []byte, per int, fn func(parts [][]byte)) {
	n, k := binary.Uvarint(v)
	if k <= 0 {
		return
	}
	v = v[k:]
	parts := make([][]byte, per)
	for ; n > 0; n-- {
		for i := range parts {
			l, k := binary.Uvarint(v)
			if k <= 0 || l > uint64(len(v)-k) {
				return
			}
			parts[i], v = v[k:k+int(l)], v[k+int(l):]
		}
		fn(parts)
	}
}
