package hostile

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// The fixed parts of FORMAT.md.
const (
	MetadataName  = "_metadata"
	preambleLen   = 12
	blockHeader   = 9
	formatVersion = 1
)

// snapshotCodes is the table of serializer snapshot codes.
var snapshotCodes = map[serializers.Kind]byte{
	serializers.KindBool: 1, serializers.KindInt32: 2, serializers.KindInt64: 3, serializers.KindFloat32: 4,
	serializers.KindFloat64: 5, serializers.KindString: 6, serializers.KindBytes: 7, serializers.KindTimestamp: 8,
	serializers.KindAvro: 9, serializers.KindList: 10, serializers.KindMap: 11, serializers.KindNullable: 12,
	serializers.KindTTL: 13, serializers.KindTimer: 14, serializers.KindVoid: 15, serializers.KindWindow: 16,
}

// Preamble is the 12 bytes every file starts with: typ is 'M' or 'D'.
func Preamble(typ byte, version uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{'S', 'T', 'P', 'R', 'O', 'C', typ, 0}, version)
}

func uv(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func str(b []byte, s string) []byte { return append(uv(b, uint64(len(s))), s...) }

// Bytes appends a length-prefixed byte string.
func Bytes(b, s []byte) []byte { return append(uv(b, uint64(len(s))), s...) }

func snapshot(b []byte, s serializers.Snapshot) []byte {
	code, ok := snapshotCodes[s.Kind]
	if !ok {
		panic(fmt.Sprintf("hostile: no snapshot code for %q", s.Kind))
	}
	b = append(b, code)
	switch s.Kind {
	case serializers.KindAvro:
		b = str(b, s.Schema)
	case serializers.KindList, serializers.KindNullable, serializers.KindTTL, serializers.KindMap, serializers.KindTimer:
		for _, a := range s.Args {
			b = snapshot(b, a)
		}
	}
	return b
}

// Segment is an index entry as the metadata stores it; File indexes the
// savepoint's data files. Timestamps are written for TTL states and timer
// services.
type Segment struct {
	KeyGroup, Ref, File  int
	Offset, Length       int64
	Keys, Entries, Bytes uint64
	MinTS, MaxTS         int64
}

// File is a data file as the metadata lists it.
type File struct {
	Name string
	Size int64
}

// Metadata is what a _metadata body holds. Segments are per operator.
type Metadata struct {
	ID        uint64
	CreatedAt int64
	Files     []File
	Operators []savepoint.Operator
	Segments  [][]Segment
}

// Body encodes the metadata body.
func (m *Metadata) Body() []byte {
	b := uv(nil, m.ID)
	b = binary.BigEndian.AppendUint64(b, uint64(m.CreatedAt))
	b = uv(b, 0) // lineage
	b = uv(b, uint64(len(m.Files)))
	for _, f := range m.Files {
		b = uv(str(b, f.Name), uint64(f.Size))
	}
	b = uv(b, uint64(len(m.Operators)))
	for i := range m.Operators {
		op := &m.Operators[i]
		b = str(str(b, op.UID), op.Name)
		b = uv(uv(b, uint64(op.Parallelism)), uint64(op.MaxParallelism))
		b = append(b, byte(op.KeyHash))
		if op.KeyHash != 0 {
			b = snapshot(b, op.Key)
		}
		b = uv(b, uint64(len(op.States)))
		for _, s := range op.States {
			b = append(str(b, s.Name), byte(s.Kind))
			b = snapshot(b, s.Namespace)
			if s.Kind == savepoint.Map {
				b = snapshot(b, s.MapKey)
			}
			b = snapshot(b, s.Value)
			if s.TTL == nil {
				b = append(b, 0)
				continue
			}
			flags := byte(0)
			if s.TTL.CleanupFullSnapshot {
				flags = 1
			}
			b = append(b, 1)
			b = uv(b, uint64(s.TTL.TTL/time.Millisecond))
			b = append(b, byte(s.TTL.Update), byte(s.TTL.Visibility), flags)
			b = uv(uv(b, uint64(s.TTL.CleanupIncremental)), uint64(s.TTL.SweepBudget))
		}
		b = uv(b, uint64(len(op.Timers)))
		for _, t := range op.Timers {
			b = snapshot(str(b, t.Name), t.Namespace)
		}
		b = uv(b, 0) // operator states
		b = uv(b, 0) // broadcast states
		var segs []Segment
		if i < len(m.Segments) {
			segs = m.Segments[i]
		}
		b = uv(b, uint64(len(segs)))
		for _, s := range segs {
			for _, v := range []uint64{uint64(s.KeyGroup), uint64(s.Ref), uint64(s.File), uint64(s.Offset), uint64(s.Length), s.Keys, s.Entries, s.Bytes} {
				b = uv(b, v)
			}
			if timestamps(op, s.Ref) {
				b = binary.BigEndian.AppendUint64(b, uint64(s.MinTS))
				b = binary.BigEndian.AppendUint64(b, uint64(s.MaxTS))
			}
		}
	}
	return b
}

// timestamps reports whether segments of ref record a TTL or timer range.
func timestamps(op *savepoint.Operator, ref int) bool {
	return ref >= len(op.States) || op.States[ref].TTL != nil
}

// MetadataFile frames a body as a whole _metadata file of the given
// format version.
func MetadataFile(body []byte, version uint32) []byte {
	b := Preamble('M', version)
	b = binary.BigEndian.AppendUint64(b, uint64(len(body)))
	b = append(b, body...)
	return binary.BigEndian.AppendUint32(b, crc.Checksum(b[preambleLen:]))
}

// Block frames a payload: the header, the stored bytes and the CRC. raw
// is the raw length the header claims.
func Block(codec byte, stored []byte, raw int) []byte {
	b := []byte{codec}
	b = binary.BigEndian.AppendUint32(b, uint32(len(stored)))
	b = binary.BigEndian.AppendUint32(b, uint32(raw))
	b = append(b, stored...)
	return binary.BigEndian.AppendUint32(b, crc.Checksum(b))
}

// RawBlock is an uncompressed block of payload.
func RawBlock(payload []byte) []byte { return Block(0, payload, len(payload)) }

// ZstdBlock is a zstd block of payload.
func ZstdBlock(payload []byte) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(err)
	}
	defer enc.Close()
	return Block(1, enc.EncodeAll(payload, nil), len(payload))
}

// Record appends a record of a state: its key and namespace, and items,
// each a value or, in a map state, a map key and a value.
func Record(b, key, ns []byte, items ...[]byte) []byte {
	return RecordCount(b, key, ns, uint64(len(items)), items...)
}

// RecordCount is Record with the item count given, whatever items holds.
func RecordCount(b, key, ns []byte, count uint64, items ...[]byte) []byte {
	b = uv(Bytes(Bytes(b, key), ns), count)
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

// Item is one item's bytes: a value, or a map key and a value.
func Item(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = Bytes(b, p)
	}
	return b
}

// Timer appends a timer: its time with the sign bit flipped, key and
// namespace.
func Timer(b []byte, t int64, key, ns []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(t)^1<<63)
	return Bytes(Bytes(b, key), ns)
}
