package serializers

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync"
)

// List encodes a slice as a uvarint count followed by each element as a
// uvarint length and the element's bytes.
func List[T any](elem Of[T]) Of[[]T] { return listSer[T]{elem, validatorOf(elem)} }

// Map encodes a map as a uvarint count followed by each entry as uvarint key
// length, key bytes, uvarint value length, value bytes. Entries are sorted by
// their encoded keys, so a map has one encoding; two keys that encode to the
// same bytes are an error.
func Map[K comparable, V any](key Of[K], val Of[V]) Of[map[K]V] { return mapSer[K, V]{key, val} }

// Nullable encodes nil as 0x00 and a value as 0x01 followed by the element's
// bytes.
func Nullable[T any](elem Of[T]) Of[*T] { return nullableSer[T]{elem} }

type listSer[T any] struct {
	elem      Of[T]
	elemCheck validator
}

func (s listSer[T]) Snapshot() Snapshot {
	return Snapshot{Kind: KindList, Args: []Snapshot{s.elem.Snapshot()}}
}

func (s listSer[T]) Append(dst []byte, v []T) ([]byte, error) {
	orig := len(dst)
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	for i := range v {
		var at int
		var err error
		dst, at = beginFrame(dst)
		if dst, err = s.elem.Append(dst, v[i]); err != nil {
			return dst[:orig], within(err, ErrEncode, "list element %d", i)
		}
		dst = endFrame(dst, at)
	}
	return dst, nil
}

func (s listSer[T]) Decode(src []byte) ([]T, error) {
	f := frames{kind: KindList, src: src}
	n, err := f.count(1)
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		b, err := f.frame("element")
		if err != nil {
			return nil, err
		}
		if out[i], err = s.elem.Decode(b); err != nil {
			return nil, within(err, ErrDecode, "list element %d", i)
		}
	}
	return out, f.end()
}

func (s listSer[T]) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s listSer[T]) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type mapSer[K comparable, V any] struct {
	key Of[K]
	val Of[V]
}

func (s mapSer[K, V]) Snapshot() Snapshot {
	return Snapshot{Kind: KindMap, Args: []Snapshot{s.key.Snapshot(), s.val.Snapshot()}}
}

func (s mapSer[K, V]) Append(dst []byte, m map[K]V) ([]byte, error) {
	es := getEntries()
	defer es.release()
	for k, v := range m {
		start := len(es.buf)
		var err error
		if es.buf, err = s.key.Append(es.buf, k); err != nil {
			return dst, within(err, ErrEncode, "map key")
		}
		mid := len(es.buf)
		if es.buf, err = s.val.Append(es.buf, v); err != nil {
			return dst, within(err, ErrEncode, "map value")
		}
		es.spans = append(es.spans, entrySpan{start, mid, len(es.buf)})
	}
	return es.appendSorted(dst)
}

func (s mapSer[K, V]) Decode(src []byte) (map[K]V, error) {
	m := make(map[K]V)
	err := readEntries(src, func(i int, kb, vb []byte) error {
		k, err := s.key.Decode(kb)
		if err != nil {
			return within(err, ErrDecode, "map key %d", i)
		}
		v, err := s.val.Decode(vb)
		if err != nil {
			return within(err, ErrDecode, "map value %d", i)
		}
		m[k] = v
		if len(m) != i+1 {
			return decodeErr("map: key %d decodes to the same value as an earlier key", i)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (s mapSer[K, V]) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s mapSer[K, V]) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

// readEntries walks the entries of an encoded map, checking that keys
// strictly increase, and calls fn with each entry's index, key and value
// bytes.
func readEntries(src []byte, fn func(i int, key, val []byte) error) error {
	f := frames{kind: KindMap, src: src}
	// An entry takes at least its two lengths.
	n, err := f.count(2)
	if err != nil {
		return err
	}
	var prev []byte
	for i := range n {
		kb, err := f.frame("key")
		if err != nil {
			return err
		}
		vb, err := f.frame("value")
		if err != nil {
			return err
		}
		if i > 0 && bytes.Compare(prev, kb) >= 0 {
			return decodeErr("map: key %d is not greater than key %d (entries must be sorted by key bytes, without duplicates)", i, i-1)
		}
		prev = kb
		if err := fn(i, kb, vb); err != nil {
			return err
		}
	}
	return f.end()
}

// entries collects encoded map entries so that they can be written sorted
// by key. Pooled: a map encoding needs it only until the entries are copied
// out.
type entries struct {
	buf   []byte
	spans []entrySpan
}

// entrySpan locates an entry in entries.buf: key buf[start:mid], value
// buf[mid:end].
type entrySpan struct{ start, mid, end int }

var entriesPool = sync.Pool{New: func() any { return new(entries) }}

func getEntries() *entries { return entriesPool.Get().(*entries) }

func (e *entries) release() {
	// Keep big buffers out of the pool: one huge map should not pin memory.
	if cap(e.buf) > 1<<20 || cap(e.spans) > 1<<14 {
		return
	}
	e.buf, e.spans = e.buf[:0], e.spans[:0]
	entriesPool.Put(e)
}

func (e *entries) key(s entrySpan) []byte { return e.buf[s.start:s.mid] }

func (e *entries) appendSorted(dst []byte) ([]byte, error) {
	slices.SortFunc(e.spans, func(a, b entrySpan) int { return bytes.Compare(e.key(a), e.key(b)) })
	for i := 1; i < len(e.spans); i++ {
		if bytes.Equal(e.key(e.spans[i-1]), e.key(e.spans[i])) {
			return dst, encodeErr("map: two keys encode to the same bytes %x", e.key(e.spans[i]))
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.spans)))
	for _, s := range e.spans {
		dst = binary.AppendUvarint(dst, uint64(s.mid-s.start))
		dst = append(dst, e.buf[s.start:s.mid]...)
		dst = binary.AppendUvarint(dst, uint64(s.end-s.mid))
		dst = append(dst, e.buf[s.mid:s.end]...)
	}
	return dst, nil
}

type nullableSer[T any] struct{ elem Of[T] }

func (s nullableSer[T]) Snapshot() Snapshot {
	return Snapshot{Kind: KindNullable, Args: []Snapshot{s.elem.Snapshot()}}
}

func (s nullableSer[T]) Append(dst []byte, v *T) ([]byte, error) {
	if v == nil {
		return append(dst, 0), nil
	}
	out, err := s.elem.Append(append(dst, 1), *v)
	if err != nil {
		return dst, within(err, ErrEncode, "nullable")
	}
	return out, nil
}

func (s nullableSer[T]) Decode(src []byte) (*T, error) {
	present, elem, err := splitNullable(src)
	if err != nil || !present {
		return nil, err
	}
	v, err := s.elem.Decode(elem)
	if err != nil {
		return nil, within(err, ErrDecode, "nullable")
	}
	return &v, nil
}

func (s nullableSer[T]) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s nullableSer[T]) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

func splitNullable(src []byte) (present bool, elem []byte, err error) {
	if len(src) == 0 {
		return false, nil, decodeErr("nullable: want at least 1 byte, got 0")
	}
	switch src[0] {
	case 0:
		if len(src) != 1 {
			return false, nil, decodeErr("nullable: null followed by %d trailing bytes", len(src)-1)
		}
		return false, nil, nil
	case 1:
		return true, src[1:], nil
	}
	return false, nil, decodeErr("nullable: flag byte %#02x is neither 0x00 nor 0x01", src[0])
}
