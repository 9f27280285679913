package serializers

// MapEntry is one entry of a map in the untyped view. A restored map decodes
// to []MapEntry sorted by encoded key, and encodes a []MapEntry in any order.
type MapEntry struct {
	Key, Value any
}

// Present is how the untyped view of a nullable says "present" when the
// element's own untyped value is nil or a Present: a nullable of a nullable,
// or of an Avro union with null. Without it, absent and present-but-null
// would both be nil. A restored nullable decodes such a value to
// Present{Value: v} and encodes Present{Value: v} as present with element
// value v.
type Present struct {
	Value any
}

// asAny gives a serializer the typed view over its untyped values, so that
// restored serializers can be the elements of the generic composites.
func asAny(s Serializer) Of[any] {
	if o, ok := s.(Of[any]); ok {
		return o
	}
	return untyped{s}
}

type untyped struct{ Serializer }

func (u untyped) Append(dst []byte, v any) ([]byte, error) { return u.AppendAny(dst, v) }
func (u untyped) Decode(src []byte) (any, error)           { return u.DecodeAny(src) }

// entriesSer is the restored map: keys need not be comparable Go values (an
// Avro record, a byte slice), so entries are a slice.
type entriesSer struct {
	key, val           Serializer
	keyCheck, valCheck validator
}

func (s entriesSer) Snapshot() Snapshot {
	return Snapshot{Kind: KindMap, Args: []Snapshot{s.key.Snapshot(), s.val.Snapshot()}}
}

func (s entriesSer) Append(dst []byte, m []MapEntry) ([]byte, error) {
	es := getEntries()
	defer es.release()
	for i, e := range m {
		start := len(es.buf)
		var err error
		if es.buf, err = s.key.AppendAny(es.buf, e.Key); err != nil {
			return dst, within(err, ErrEncode, "map key %d", i)
		}
		mid := len(es.buf)
		if es.buf, err = s.val.AppendAny(es.buf, e.Value); err != nil {
			return dst, within(err, ErrEncode, "map value %d", i)
		}
		es.spans = append(es.spans, entrySpan{start, mid, len(es.buf)})
	}
	return es.appendSorted(dst)
}

func (s entriesSer) Decode(src []byte) ([]MapEntry, error) {
	var out []MapEntry
	err := readEntries(src, func(i int, kb, vb []byte) error {
		k, err := s.key.DecodeAny(kb)
		if err != nil {
			return within(err, ErrDecode, "map key %d", i)
		}
		v, err := s.val.DecodeAny(vb)
		if err != nil {
			return within(err, ErrDecode, "map value %d", i)
		}
		out = append(out, MapEntry{Key: k, Value: v})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []MapEntry{}
	}
	return out, nil
}

func (s entriesSer) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s entriesSer) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

// optionalSer is the restored nullable: nil or the element's value.
type optionalSer struct {
	elem      Serializer
	elemCheck validator
}

func (s optionalSer) Snapshot() Snapshot {
	return Snapshot{Kind: KindNullable, Args: []Snapshot{s.elem.Snapshot()}}
}

func (s optionalSer) Append(dst []byte, v any) ([]byte, error) {
	if v == nil {
		return append(dst, 0), nil
	}
	if p, ok := v.(Present); ok {
		v = p.Value
	}
	out, err := s.elem.AppendAny(append(dst, 1), v)
	if err != nil {
		return dst, within(err, ErrEncode, "nullable")
	}
	return out, nil
}

func (s optionalSer) Decode(src []byte) (any, error) {
	present, elem, err := splitNullable(src)
	if err != nil || !present {
		return nil, err
	}
	v, err := s.elem.DecodeAny(elem)
	if err != nil {
		return nil, within(err, ErrDecode, "nullable")
	}
	if _, ok := v.(Present); ok || v == nil {
		return Present{Value: v}, nil
	}
	return v, nil
}

func (s optionalSer) AppendAny(dst []byte, v any) ([]byte, error) { return s.Append(dst, v) }
func (s optionalSer) DecodeAny(src []byte) (any, error)           { return s.Decode(src) }
