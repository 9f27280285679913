package serializers

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sync"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
)

// maxAvroValue bounds hamba's allocations for one string, bytes or array.
// Lengths are checked against the input before hamba sees it; this is the
// second line. It matches the largest block a savepoint may hold.
const maxAvroValue = 256 << 20

var avroAPI = avro.Config{
	// One block per array or map, with a plain count: the same value then
	// always has the same bytes.
	BlockLength:            math.MaxInt32,
	DisableBlockSizeHeader: true,
	MaxByteSliceSize:       maxAvroValue,
	MaxSliceAllocSize:      maxAvroValue,
}.Freeze()

var (
	avroWriters = sync.Pool{New: func() any { return avro.NewWriter(nil, 512, avro.WithWriterConfig(avroAPI)) }}
	avroReaders = sync.Pool{New: func() any { return avro.NewReader(nil, 0, avro.WithReaderConfig(avroAPI)) }}
)

// AvroGeneric encodes hamba's generic Go values for the schema
// (map[string]any for records, string for enums, map[string]any{"type":
// value} or nil for unions, [N]byte for fixed, ...) as Avro binary.
func AvroGeneric(schema string) (Of[any], error) {
	s, err := newAvro[any](schema)
	if err != nil {
		return nil, fmt.Errorf("serializers: %w", err)
	}
	return s, nil
}

// Avro encodes T, typically a struct with `avro:"field"` tags, as Avro
// binary with the schema. It checks up front that a T can hold a value of
// the schema and be encoded back.
func Avro[T any](schema string) (Of[T], error) {
	s, err := newAvro[T](schema)
	if err != nil {
		return nil, fmt.Errorf("serializers: %w", err)
	}
	zero, ok := appendZero(nil, s.schema, map[string]bool{})
	if !ok {
		return nil, errors.New("serializers: avro: the schema has no finite value")
	}
	v, err := s.Decode(zero)
	if err != nil {
		return nil, fmt.Errorf("serializers: avro: %v cannot hold the schema's values: %w", reflect.TypeFor[T](), err)
	}
	if _, err := s.Append(nil, v); err != nil {
		return nil, fmt.Errorf("serializers: avro: %v cannot be encoded with the schema: %w", reflect.TypeFor[T](), err)
	}
	return s, nil
}

type avroSer[T any] struct {
	schema avro.Schema
	json   string
	// plan is the schema against itself: it validates input for hamba and
	// sorts the maps hamba writes in Go's random order.
	plan *avroPlan
}

func newAvro[T any](schema string) (*avroSer[T], error) {
	parsed, compact, err := parseAvroSchema(schema)
	if err != nil {
		return nil, err
	}
	plan, err := compileAvro(parsed, parsed, nil)
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	return &avroSer[T]{schema: parsed, json: compact, plan: plan}, nil
}

// parseAvroSchema parses a schema with the bounds every reader of the
// toolkit applies.
func parseAvroSchema(schema string) (avro.Schema, string, error) {
	parsed, compact, err := avrobin.ParseSchema(schema)
	if err != nil {
		return nil, "", fmt.Errorf("avro: %w", err)
	}
	return parsed, compact, nil
}

func (s *avroSer[T]) Snapshot() Snapshot { return Snapshot{Kind: KindAvro, Schema: s.json} }

func (s *avroSer[T]) Append(dst []byte, v T) ([]byte, error) {
	w := avroWriters.Get().(*avro.Writer)
	w.Reset(nil)
	w.WriteVal(s.schema, v)
	var err error
	switch {
	case w.Error != nil:
		err = within(w.Error, ErrEncode, "avro")
	case s.plan.hasMap || s.plan.hasString:
		// The transcoder sorts the maps and checks that strings are UTF-8,
		// as Decode will.
		dst, err = transcode(s.plan, dst, w.Buffer())
		if err != nil {
			err = encodeErr("%s", err.(*valueError).msg)
		}
	default:
		dst = append(dst, w.Buffer()...)
	}
	w.Error = nil
	if cap(w.Buffer()) <= 1<<20 {
		avroWriters.Put(w)
	}
	return dst, err
}

func (s *avroSer[T]) Decode(src []byte) (T, error) {
	var v T
	if err := validateAvro(s.plan, src); err != nil {
		return v, err
	}
	r := avroReaders.Get().(*avro.Reader)
	r.Reset(src)
	r.ReadVal(s.schema, &v)
	err := r.Error
	if err == nil {
		// Peek sets io.EOF when nothing is left.
		r.Peek()
		if r.Error == nil {
			err = decodeErr("avro: bytes left after the datum")
		} else if !errors.Is(r.Error, io.EOF) {
			err = within(r.Error, ErrDecode, "avro")
		}
	} else {
		err = within(err, ErrDecode, "avro")
	}
	r.Error = nil
	r.Reset(nil)
	avroReaders.Put(r)
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

func (s *avroSer[T]) AppendAny(dst []byte, v any) ([]byte, error) { return appendAs(s, dst, v) }
func (s *avroSer[T]) DecodeAny(src []byte) (any, error)           { return decodeAs(s, src) }
