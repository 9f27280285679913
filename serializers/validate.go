package serializers

import (
	"reflect"
	"unicode/utf8"
)

// Validator returns a function that reports the error s.DecodeAny(src)
// would report, or nil when it would decode, without building the value:
// verify --deep checks every stored value, and building each one (a
// string, an interface box, a slice of map entries) costs several times
// what checking its bytes does. The serializers Restore returns validate
// without allocating; others, and the external serializers of other
// layouts, are decoded. Get the function once and call it for every value.
func Validator(s Serializer) func(src []byte) error { return validatorOf(s).validate }

// validator is implemented by the serializers that check bytes without
// decoding them. validate must fail exactly where Decode fails, with the
// same error. Composites keep their elements' validators, so that checking
// a value asserts no interface types.
type validator interface {
	validate(src []byte) error
}

func validatorOf(s Serializer) validator {
	switch v := s.(type) {
	case untyped:
		return validatorOf(v.Serializer)
	case validator:
		return v
	}
	return decoding{s}
}

// decoding validates by decoding.
type decoding struct{ s Serializer }

func (d decoding) validate(src []byte) error {
	_, err := d.s.DecodeAny(src)
	return err
}

func (boolSer) validate(src []byte) error {
	_, err := boolSer{}.Decode(src)
	return err
}

func (int32Ser) validate(src []byte) error   { return wantLen(KindInt32, 4, src) }
func (int64Ser) validate(src []byte) error   { return wantLen(KindInt64, 8, src) }
func (float32Ser) validate(src []byte) error { return wantLen(KindFloat32, 4, src) }
func (float64Ser) validate(src []byte) error { return wantLen(KindFloat64, 8, src) }

func (timestampSer) validate(src []byte) error { return wantLen(KindTimestamp, 8, src) }
func (voidSer) validate(src []byte) error      { return wantLen(KindVoid, 0, src) }
func (windowSer) validate(src []byte) error    { return wantLen(KindWindow, 16, src) }
func (bytesSer) validate([]byte) error         { return nil }

func (stringSer) validate(src []byte) error {
	if !utf8.Valid(src) {
		return decodeErr("string: not valid UTF-8")
	}
	return nil
}

func wantLen(kind Kind, want int, src []byte) error {
	if len(src) != want {
		return wantBytes(kind, want, len(src))
	}
	return nil
}

func (s listSer[T]) validate(src []byte) error {
	f := frames{kind: KindList, src: src}
	n, err := f.count(1)
	if err != nil {
		return err
	}
	for i := range n {
		b, err := f.frame("element")
		if err != nil {
			return err
		}
		if err := s.elemCheck.validate(b); err != nil {
			return within(err, ErrDecode, "list element %d", i)
		}
	}
	return f.end()
}

func (s entriesSer) validate(src []byte) error {
	return readEntries(src, func(i int, kb, vb []byte) error {
		if err := s.keyCheck.validate(kb); err != nil {
			return within(err, ErrDecode, "map key %d", i)
		}
		if err := s.valCheck.validate(vb); err != nil {
			return within(err, ErrDecode, "map value %d", i)
		}
		return nil
	})
}

func (s optionalSer) validate(src []byte) error {
	present, elem, err := splitNullable(src)
	if err != nil || !present {
		return err
	}
	if err := s.elemCheck.validate(elem); err != nil {
		return within(err, ErrDecode, "nullable")
	}
	return nil
}

func (s ttlSer[T]) validate(src []byte) error {
	if len(src) < 8 {
		return decodeErr("ttl: want at least 8 bytes, got %d", len(src))
	}
	if err := s.elemCheck.validate(src[8:]); err != nil {
		return within(err, ErrDecode, "ttl value")
	}
	return nil
}

func (s timerSer[K, N]) validate(src []byte) error {
	if len(src) < 9 {
		return decodeErr("timer: want at least 9 bytes, got %d", len(src))
	}
	f := frames{kind: KindTimer, src: src[8:]}
	kb, err := f.frame("key")
	if err != nil {
		return err
	}
	if err := s.keyCheck.validate(kb); err != nil {
		return within(err, ErrDecode, "timer key")
	}
	if err := s.nsCheck.validate(f.src); err != nil {
		return within(err, ErrDecode, "timer namespace")
	}
	return nil
}

// validate runs the check Decode runs before hamba reads the datum. For
// hamba's generic values that check is the whole of what can fail; a datum
// decoded into a Go type of the job's may still not fit it, so that is
// decoded.
func (s *avroSer[T]) validate(src []byte) error {
	if reflect.TypeFor[T]() != reflect.TypeFor[any]() {
		_, err := s.Decode(src)
		return err
	}
	return validateAvro(s.plan, src)
}
