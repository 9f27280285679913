package flinksource

import (
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/serializers"
)

// splitClass names the record a source reader's split decodes to.
const splitClass = "SourceSplit"

var (
	kafkaSplitType = &typeser.Type{Kind: typeser.KindRecord, Class: "KafkaPartitionSplit", Fields: []typeser.Field{
		{Name: "topic", Type: &typeser.Type{Kind: typeser.KindString}},
		{Name: "partition", Type: &typeser.Type{Kind: typeser.KindInt32}},
		{Name: "starting_offset", Type: &typeser.Type{Kind: typeser.KindInt64}},
		{Name: "stopping_offset", Type: &typeser.Type{Kind: typeser.KindInt64}},
	}}
	sequenceSplitType = &typeser.Type{Kind: typeser.KindRecord, Class: "NumberSequenceSplit", Fields: []typeser.Field{
		{Name: "id", Type: &typeser.Type{Kind: typeser.KindString}},
		{Name: "from", Type: &typeser.Type{Kind: typeser.KindInt64}},
		{Name: "to", Type: &typeser.Type{Kind: typeser.KindInt64}},
	}}
	// splitType is a split of any source: the version of its serializer,
	// the Kafka or number-sequence split it decodes to when it is one,
	// and its bytes.
	splitType = &typeser.Type{Kind: typeser.KindRecord, Class: splitClass, Fields: []typeser.Field{
		{Name: "version", Type: &typeser.Type{Kind: typeser.KindInt32}},
		{Name: "kafka", Type: &typeser.Type{Kind: typeser.KindNullable, Elem: kafkaSplitType}, Nullable: true},
		{Name: "number_sequence", Type: &typeser.Type{Kind: typeser.KindNullable, Elem: sequenceSplitType}, Nullable: true},
		{Name: "bytes", Type: &typeser.Type{Kind: typeser.KindBytes}},
	}}
)

// splitSerializer decodes the elements of SourceReaderState, byte arrays
// of versioned splits, into splitType records.
func splitSerializer(elem *typeser.Serializer) *Serializer {
	s := &Serializer{ser: elem, typ: splitType}
	s.decode = func(b []byte) (any, error) {
		v, err := elem.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", serializers.ErrDecode, err)
		}
		raw, _ := v.([]byte)
		split, err := flinkfmt.DecodeSourceSplit(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: source split: %w", serializers.ErrDecode, err)
		}
		out := typeser.RecordValue{Class: splitClass, Fields: []typeser.FieldValue{
			{Name: "version", Value: split.Version}, {Name: "kafka"}, {Name: "number_sequence"}, {Name: "bytes", Value: split.Bytes},
		}}
		if k := split.Kafka; k != nil {
			out.Fields[1].Value = typeser.RecordValue{Class: kafkaSplitType.Class, Fields: []typeser.FieldValue{
				{Name: "topic", Value: k.Topic}, {Name: "partition", Value: k.Partition},
				{Name: "starting_offset", Value: k.StartingOffset}, {Name: "stopping_offset", Value: k.StoppingOffset},
			}}
		}
		if n := split.NumberSequence; n != nil {
			out.Fields[2].Value = typeser.RecordValue{Class: sequenceSplitType.Class, Fields: []typeser.FieldValue{
				{Name: "id", Value: n.ID}, {Name: "from", Value: n.From}, {Name: "to", Value: n.To},
			}}
		}
		return out, nil
	}
	return s
}
