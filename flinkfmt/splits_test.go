package flinkfmt

import (
	"encoding/binary"
	"testing"
)

// A Kafka split as KafkaPartitionSplitSerializer (version 0) writes it,
// inside SimpleVersionedSerialization.
func TestDecodeKafkaSplit(t *testing.T) {
	payload := []byte{0, 6, 'o', 'r', 'd', 'e', 'r', 's'}
	payload = binary.BigEndian.AppendUint32(payload, 3)
	payload = binary.BigEndian.AppendUint64(payload, 1234)
	payload = binary.BigEndian.AppendUint64(payload, uint64(1<<63)) // NO_STOPPING_OFFSET, Long.MIN_VALUE
	el := binary.BigEndian.AppendUint32(nil, 0)
	el = binary.BigEndian.AppendUint32(el, uint32(len(payload)))
	el = append(el, payload...)
	s, err := DecodeSourceSplit(el)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kafka == nil || *s.Kafka != (KafkaSplit{Topic: "orders", Partition: 3, StartingOffset: 1234, StoppingOffset: -1 << 63}) {
		t.Errorf("%+v", s.Kafka)
	}
	if _, err := DecodeSourceSplit(el[:len(el)-1]); err == nil {
		t.Error("a truncated split decoded")
	}
}
