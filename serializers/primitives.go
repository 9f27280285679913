package serializers

import (
	"encoding/binary"
	"math"
	"time"
	"unicode/utf8"
)

// Bool encodes a bool as one byte, 0x00 or 0x01.
func Bool() Of[bool] { return boolSer{} }

// Int32 encodes an int32 as 4 bytes, big-endian.
func Int32() Of[int32] { return int32Ser{} }

// Int64 encodes an int64 as 8 bytes, big-endian.
func Int64() Of[int64] { return int64Ser{} }

// Float32 encodes a float32 as its IEEE-754 bits, big-endian. NaN payloads
// are kept.
func Float32() Of[float32] { return float32Ser{} }

// Float64 encodes a float64 as its IEEE-754 bits, big-endian. NaN payloads
// are kept.
func Float64() Of[float64] { return float64Ser{} }

// String encodes a string as its UTF-8 bytes, with no length: the framing
// around a value says where it ends. Strings that are not valid UTF-8 are
// refused both ways.
func String() Of[string] { return stringSer{} }

// Bytes encodes a byte slice as itself. nil and empty encode alike; Decode
// returns a fresh slice, empty but not nil for zero bytes. Use
// Nullable(Bytes()) to tell a missing value from an empty one.
func Bytes() Of[[]byte] { return bytesSer{} }

// Timestamp encodes a time as int64 milliseconds since the Unix epoch,
// big-endian. Sub-millisecond parts are dropped (rounding towards the past)
// and the location is not kept: Decode returns UTC.
func Timestamp() Of[time.Time] { return timestampSer{} }

type boolSer struct{}

func (boolSer) Snapshot() Snapshot { return Snapshot{Kind: KindBool} }

func (boolSer) Append(dst []byte, v bool) ([]byte, error) {
	if v {
		return append(dst, 1), nil
	}
	return append(dst, 0), nil
}

func (boolSer) Decode(src []byte) (bool, error) {
	if len(src) != 1 {
		return false, wantBytes(KindBool, 1, len(src))
	}
	switch src[0] {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, decodeErr("bool: byte %#02x is neither 0x00 nor 0x01", src[0])
}

func (s boolSer) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s boolSer) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type int32Ser struct{}

func (int32Ser) Snapshot() Snapshot { return Snapshot{Kind: KindInt32} }

func (int32Ser) Append(dst []byte, v int32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(dst, uint32(v)), nil
}

func (int32Ser) Decode(src []byte) (int32, error) {
	if len(src) != 4 {
		return 0, wantBytes(KindInt32, 4, len(src))
	}
	return int32(binary.BigEndian.Uint32(src)), nil
}

func (s int32Ser) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s int32Ser) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type int64Ser struct{}

func (int64Ser) Snapshot() Snapshot { return Snapshot{Kind: KindInt64} }

func (int64Ser) Append(dst []byte, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(dst, uint64(v)), nil
}

func (int64Ser) Decode(src []byte) (int64, error) {
	if len(src) != 8 {
		return 0, wantBytes(KindInt64, 8, len(src))
	}
	return int64(binary.BigEndian.Uint64(src)), nil
}

func (s int64Ser) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s int64Ser) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type float32Ser struct{}

func (float32Ser) Snapshot() Snapshot { return Snapshot{Kind: KindFloat32} }

func (float32Ser) Append(dst []byte, v float32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(dst, math.Float32bits(v)), nil
}

func (float32Ser) Decode(src []byte) (float32, error) {
	if len(src) != 4 {
		return 0, wantBytes(KindFloat32, 4, len(src))
	}
	return math.Float32frombits(binary.BigEndian.Uint32(src)), nil
}

func (s float32Ser) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s float32Ser) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type float64Ser struct{}

func (float64Ser) Snapshot() Snapshot { return Snapshot{Kind: KindFloat64} }

func (float64Ser) Append(dst []byte, v float64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v)), nil
}

func (float64Ser) Decode(src []byte) (float64, error) {
	if len(src) != 8 {
		return 0, wantBytes(KindFloat64, 8, len(src))
	}
	return math.Float64frombits(binary.BigEndian.Uint64(src)), nil
}

func (s float64Ser) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s float64Ser) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type stringSer struct{}

func (stringSer) Snapshot() Snapshot { return Snapshot{Kind: KindString} }

func (stringSer) Append(dst []byte, v string) ([]byte, error) {
	if !utf8.ValidString(v) {
		return dst, encodeErr("string: not valid UTF-8")
	}
	return append(dst, v...), nil
}

func (stringSer) Decode(src []byte) (string, error) {
	if !utf8.Valid(src) {
		return "", decodeErr("string: not valid UTF-8")
	}
	return string(src), nil
}

func (s stringSer) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s stringSer) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type bytesSer struct{}

func (bytesSer) Snapshot() Snapshot { return Snapshot{Kind: KindBytes} }

func (bytesSer) Append(dst []byte, v []byte) ([]byte, error) { return append(dst, v...), nil }

func (bytesSer) Decode(src []byte) ([]byte, error) { return append([]byte{}, src...), nil }

func (s bytesSer) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s bytesSer) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type timestampSer struct{}

// The times whose milliseconds fit in an int64.
var (
	minTimestamp = time.UnixMilli(math.MinInt64)
	maxTimestamp = time.UnixMilli(math.MaxInt64).Add(time.Millisecond - 1)
)

func (timestampSer) Snapshot() Snapshot { return Snapshot{Kind: KindTimestamp} }

func (timestampSer) Append(dst []byte, v time.Time) ([]byte, error) {
	if v.Before(minTimestamp) || v.After(maxTimestamp) {
		return dst, encodeErr("timestamp: %v is outside the range of int64 milliseconds", v)
	}
	return binary.BigEndian.AppendUint64(dst, uint64(v.UnixMilli())), nil
}

func (timestampSer) Decode(src []byte) (time.Time, error) {
	if len(src) != 8 {
		return time.Time{}, wantBytes(KindTimestamp, 8, len(src))
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(src))).UTC(), nil
}

func (s timestampSer) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s timestampSer) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

// appendAs and decodeAs give a typed serializer its untyped view.
func appendAs[T any](s Of[T], dst []byte, v any) ([]byte, error) {
	t, ok := As[T](v)
	if !ok {
		return dst, encodeErr("%s: cannot encode a value of type %T", s.Snapshot(), v)
	}
	return s.Append(dst, t)
}

// As converts an untyped value to T as v.(T) does, except that nil is a
// value of every interface type T: the null of an Avro "null" or union
// schema, whose Go type is any, is nil.
func As[T any](v any) (T, bool) {
	t, ok := v.(T)
	if !ok && v == nil {
		// any(zero) is nil only for an interface type.
		var zero T
		return zero, any(zero) == nil
	}
	return t, ok
}

func decodeAs[T any](s Of[T], src []byte) (any, error) {
	v, err := s.Decode(src)
	if err != nil {
		return nil, err
	}
	return v, nil
}
