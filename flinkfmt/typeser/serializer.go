package typeser

import (
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// MaxDepth bounds how deeply serializer snapshots, and so values, nest.
const MaxDepth = 48

// Errors, checked with errors.Is.
var (
	// ErrSnapshot is wrapped by every error about a serializer snapshot that
	// does not parse.
	ErrSnapshot = errors.New("typeser: bad serializer snapshot")
	// ErrUnsupported is wrapped by errors about a snapshot class this
	// package cannot restore.
	ErrUnsupported = errors.New("typeser: unsupported serializer snapshot")
	// ErrValue is wrapped by every error about a value that does not decode.
	ErrValue = errors.New("typeser: malformed value")
	// ErrUnframed is wrapped by the error of Read for a value whose end
	// cannot be found without its class (Kryo).
	ErrUnframed = errors.New("typeser: value has no length of its own")
)

// UnframedError names the serializer whose values have no length of their
// own, and the class it writes. It wraps ErrUnframed.
type UnframedError struct {
	Class, Serializer string
}

func (e *UnframedError) Error() string {
	return fmt.Sprintf("%s value of %s has no length of its own", shortClass(e.Serializer), e.Class)
}

func (e *UnframedError) Unwrap() error { return ErrUnframed }

// Serializer decodes the values of one Flink type serializer, restored from
// its snapshot.
type Serializer struct {
	// Class is the snapshot class, Version its version.
	Class   string
	Version int
	Type    *Type
	// Args are the nested serializers of a composite snapshot (a list's
	// element, a map's key and value, a TTL value's timestamp and value, a
	// timer's key and namespace, a tuple's fields), in snapshot order.
	Args []*Serializer
	c    codec
	// sk is c's skip, when it has one; prog is c as a skip program, for
	// QuickSkip, when it compiles to one, and width its width when the
	// program is one fixed width, otherwise -1.
	sk    skipper
	prog  []skipOp
	width int
}

// codec reads one value. last reports that the value ends where its frame
// ends, so that a value without a length of its own can take the rest.
// Errors are recorded in r.
type codec interface {
	read(r *wire.Buf, last bool) any
	// size returns the least number of bytes a value takes and whether every
	// value takes exactly that many.
	size() (min int, fixed bool)
}

// Decode decodes b, which must hold exactly one value.
func (s *Serializer) Decode(b []byte) (any, error) {
	r := wire.New(b, 0)
	v := s.c.read(r, true)
	if err := r.Err(); err != nil {
		return nil, valueErr(s, err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %s: %d bytes follow the value at offset %d", ErrValue, s.Type, r.Len(), r.Pos())
	}
	return v, nil
}

// Read decodes one value from the front of r. A value this package cannot
// find the end of fails with ErrUnframed.
func (s *Serializer) Read(r *wire.Buf) (any, error) {
	v := s.c.read(r, false)
	if err := r.Err(); err != nil {
		return nil, valueErr(s, err)
	}
	return v, nil
}

// Skip steps over one value at the front of r, as Read does and with the
// same checks, without building the value where its codec allows: the
// parsers only need to know where keys and list elements end.
func (s *Serializer) Skip(r *wire.Buf) error {
	if s.sk != nil {
		s.sk.skip(r, false)
	} else {
		s.c.read(r, false)
	}
	if err := r.Err(); err != nil {
		return valueErr(s, err)
	}
	return nil
}

// skipper is implemented by the codecs that can step over a value without
// building it; the others are read and the value dropped.
type skipper interface {
	skip(r *wire.Buf, last bool)
}

func skipWith(c codec, r *wire.Buf, last bool) {
	if s, ok := c.(skipper); ok {
		s.skip(r, last)
		return
	}
	c.read(r, last)
}

// PrefixFree reports that Skip finds where a value ends from the value's
// own bytes alone, so that bytes starting with a value Skip stepped over
// hold that same value there, and Skip would step over it again alike: a
// parser walking composite keys that repeat their key needs to skip it
// only once. It holds for strings, a length then that many units; a codec
// whose value may take the rest of its frame, or whose checks look at the
// bytes that follow, does not qualify.
func (s *Serializer) PrefixFree() bool {
	_, ok := s.c.(stringCodec)
	return ok
}

// FixedLen returns the length of every value, or -1 when values differ in
// length. Flink's composite keys depend on it.
func (s *Serializer) FixedLen() int {
	if n, fixed := s.c.size(); fixed {
		return n
	}
	return -1
}

func valueErr(s *Serializer, err error) error {
	if errors.Is(err, ErrUnframed) {
		return fmt.Errorf("%w: %s", err, s.Type)
	}
	return fmt.Errorf("%w: %s: %v", ErrValue, s.Type, err)
}

func newSerializer(class string, version int, t *Type, c codec) *Serializer {
	s := &Serializer{Class: class, Version: version, Type: t, c: c}
	s.sk, _ = c.(skipper)
	s.width = -1
	if prog, ok := compileSkip(c, nil, 0); ok {
		s.prog = prog
		if len(prog) == 1 && prog[0].kind == opFixed {
			s.width = prog[0].n
		}
	}
	return s
}

// Timer returns the serializer of timers of key and namespace, for timers
// whose snapshot records only those two.
func Timer(key, ns *Serializer) *Serializer {
	s := newSerializer("org.apache.flink.streaming.api.operators.TimerSerializer", 0, &Type{Kind: KindTimer, Key: key.Type, Value: ns.Type, Serializer: "org.apache.flink.streaming.api.operators.TimerSerializer"}, timerCodec{key: key.c, ns: ns.c})
	s.Args = []*Serializer{key, ns}
	return s
}
