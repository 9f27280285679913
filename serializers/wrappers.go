package serializers

import "encoding/binary"

// TTLValue is a value with the time it was last written, in milliseconds
// since the Unix epoch.
type TTLValue[T any] struct {
	LastModified int64
	Value        T
}

// TimerValue is one timer: when it fires (milliseconds since the Unix
// epoch), for which key, in which namespace.
type TimerValue[K, N any] struct {
	Timestamp int64
	Key       K
	Namespace N
}

// VoidNamespace is the namespace of state that is not windowed. It encodes
// to zero bytes.
type VoidNamespace struct{}

// TimeWindow is the namespace of windowed state: the window [Start, End) in
// milliseconds since the Unix epoch.
type TimeWindow struct{ Start, End int64 }

// TTL prefixes the element's bytes with the 8-byte big-endian last-modified
// time.
func TTL[T any](elem Of[T]) Of[TTLValue[T]] { return ttlSer[T]{elem, validatorOf(elem)} }

// Timer encodes a timer as its timestamp with the sign bit flipped (8 bytes,
// big-endian, so that encodings sort as the timestamps do), the key as a
// uvarint length and the key's bytes, then the namespace's bytes.
func Timer[K, N any](key Of[K], ns Of[N]) Of[TimerValue[K, N]] {
	return timerSer[K, N]{key, ns, validatorOf(key), validatorOf(ns)}
}

// Void encodes the void namespace as zero bytes.
func Void() Of[VoidNamespace] { return voidSer{} }

// Window encodes a time window as its start and end, each 8 bytes
// big-endian.
func Window() Of[TimeWindow] { return windowSer{} }

type ttlSer[T any] struct {
	elem      Of[T]
	elemCheck validator
}

func (s ttlSer[T]) Snapshot() Snapshot {
	return Snapshot{Kind: KindTTL, Args: []Snapshot{s.elem.Snapshot()}}
}

func (s ttlSer[T]) Append(dst []byte, v TTLValue[T]) ([]byte, error) {
	out, err := s.elem.Append(binary.BigEndian.AppendUint64(dst, uint64(v.LastModified)), v.Value)
	if err != nil {
		return dst, within(err, ErrEncode, "ttl value")
	}
	return out, nil
}

func (s ttlSer[T]) Decode(src []byte) (TTLValue[T], error) {
	if len(src) < 8 {
		return TTLValue[T]{}, decodeErr("ttl: want at least 8 bytes, got %d", len(src))
	}
	v, err := s.elem.Decode(src[8:])
	if err != nil {
		return TTLValue[T]{}, within(err, ErrDecode, "ttl value")
	}
	return TTLValue[T]{LastModified: int64(binary.BigEndian.Uint64(src)), Value: v}, nil
}

func (s ttlSer[T]) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s ttlSer[T]) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type timerSer[K, N any] struct {
	key               Of[K]
	ns                Of[N]
	keyCheck, nsCheck validator
}

func (s timerSer[K, N]) Snapshot() Snapshot {
	return Snapshot{Kind: KindTimer, Args: []Snapshot{s.key.Snapshot(), s.ns.Snapshot()}}
}

// Flipping the sign bit maps int64 order onto unsigned byte order.
const timerSignFlip = 1 << 63

func (s timerSer[K, N]) Append(dst []byte, v TimerValue[K, N]) ([]byte, error) {
	out := binary.BigEndian.AppendUint64(dst, uint64(v.Timestamp)^timerSignFlip)
	out, at := beginFrame(out)
	out, err := s.key.Append(out, v.Key)
	if err != nil {
		return dst, within(err, ErrEncode, "timer key")
	}
	out = endFrame(out, at)
	if out, err = s.ns.Append(out, v.Namespace); err != nil {
		return dst, within(err, ErrEncode, "timer namespace")
	}
	return out, nil
}

func (s timerSer[K, N]) Decode(src []byte) (TimerValue[K, N], error) {
	var zero TimerValue[K, N]
	if len(src) < 9 {
		return zero, decodeErr("timer: want at least 9 bytes, got %d", len(src))
	}
	f := frames{kind: KindTimer, src: src[8:]}
	kb, err := f.frame("key")
	if err != nil {
		return zero, err
	}
	k, err := s.key.Decode(kb)
	if err != nil {
		return zero, within(err, ErrDecode, "timer key")
	}
	n, err := s.ns.Decode(f.src)
	if err != nil {
		return zero, within(err, ErrDecode, "timer namespace")
	}
	ts := int64(binary.BigEndian.Uint64(src) ^ timerSignFlip)
	return TimerValue[K, N]{Timestamp: ts, Key: k, Namespace: n}, nil
}

func (s timerSer[K, N]) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s timerSer[K, N]) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type voidSer struct{}

func (voidSer) Snapshot() Snapshot { return Snapshot{Kind: KindVoid} }

func (voidSer) Append(dst []byte, _ VoidNamespace) ([]byte, error) { return dst, nil }

func (voidSer) Decode(src []byte) (VoidNamespace, error) {
	if len(src) != 0 {
		return VoidNamespace{}, wantBytes(KindVoid, 0, len(src))
	}
	return VoidNamespace{}, nil
}

func (s voidSer) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s voidSer) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }

type windowSer struct{}

func (windowSer) Snapshot() Snapshot { return Snapshot{Kind: KindWindow} }

func (windowSer) Append(dst []byte, w TimeWindow) ([]byte, error) {
	dst = binary.BigEndian.AppendUint64(dst, uint64(w.Start))
	return binary.BigEndian.AppendUint64(dst, uint64(w.End)), nil
}

func (windowSer) Decode(src []byte) (TimeWindow, error) {
	if len(src) != 16 {
		return TimeWindow{}, wantBytes(KindWindow, 16, len(src))
	}
	return TimeWindow{
		Start: int64(binary.BigEndian.Uint64(src)),
		End:   int64(binary.BigEndian.Uint64(src[8:])),
	}, nil
}

func (s windowSer) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s windowSer) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }
