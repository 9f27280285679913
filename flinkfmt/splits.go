package flinkfmt

import (
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// SourceReaderState is the operator list state in which a FLIP-27 source
// operator keeps its reader's splits: byte arrays, each a split written by
// SimpleVersionedSerialization (the split serializer's version, the
// length and the bytes).
const SourceReaderState = "SourceReaderState"

// SourceSplit is one split of a source reader, decoded where its
// serializer is known.
type SourceSplit struct {
	// Version is the split serializer's version, Bytes what it wrote.
	Version int32
	Bytes   []byte
	// Kafka is set for a Kafka source split, NumberSequence for the splits of
	// env.fromSequence.
	Kafka          *KafkaSplit
	NumberSequence *NumberSequenceSplit
}

// KafkaSplit is a Kafka source's split: a partition and the offsets to read
// from and, for bounded reads, to stop at (KafkaPartitionSplitSerializer).
type KafkaSplit struct {
	Topic          string
	Partition      int32
	StartingOffset int64
	StoppingOffset int64
}

// NumberSequenceSplit is a split of NumberSequenceSource: the next number
// to emit and the last.
type NumberSequenceSplit struct {
	ID       string
	From, To int64
}

// DecodeVersioned splits SimpleVersionedSerialization's form into the
// serializer version and its bytes.
func DecodeVersioned(b []byte) (int32, []byte, error) {
	r := wire.New(b, 0)
	v := r.I32()
	p := r.Sized("versioned payload")
	if err := r.Err(); err != nil {
		return 0, nil, corrupt(fmt.Errorf("versioned serialization: %w", err))
	}
	if r.Len() != 0 {
		return 0, nil, corruptf("versioned serialization: %d bytes follow the payload", r.Len())
	}
	return v, p, nil
}

// DecodeSourceSplit decodes an element of SourceReaderState (as its byte
// array serializer gives it). The split's kind is not recorded: a Kafka
// split (writeUTF topic, int partition, long start and stop offsets) and a
// number-sequence split (writeUTF id, long from and to) are told apart by
// their exact lengths; other splits keep only their bytes.
func DecodeSourceSplit(element []byte) (SourceSplit, error) {
	v, p, err := DecodeVersioned(element)
	if err != nil {
		return SourceSplit{}, err
	}
	s := SourceSplit{Version: v, Bytes: p}
	if len(p) < 2 {
		return s, nil
	}
	r := wire.New(p, 0)
	name := r.UTF("split name")
	if r.Err() != nil {
		return s, nil
	}
	switch r.Len() {
	case 4 + 8 + 8:
		if v == 0 {
			s.Kafka = &KafkaSplit{Topic: name, Partition: r.I32(), StartingOffset: r.I64(), StoppingOffset: r.I64()}
		}
	case 8 + 8:
		s.NumberSequence = &NumberSequenceSplit{ID: name, From: r.I64(), To: r.I64()}
	}
	return s, nil
}
