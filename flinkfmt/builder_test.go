package flinkfmt

import (
	"encoding/binary"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// bld writes the big-endian forms of Java's DataOutputStream, so that tests
// can build Flink files from their documented layout.
type bld []byte

func (b bld) u8(v byte) bld   { return append(b, v) }
func (b bld) u16(v int) bld   { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func (b bld) i32(v int) bld   { return binary.BigEndian.AppendUint32(b, uint32(int32(v))) }
func (b bld) i64(v int64) bld { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func (b bld) raw(p ...byte) bld {
	return append(b, p...)
}
func (b bld) utf(s string) bld { return b.u16(len(s)).raw([]byte(s)...) }

// str is StringValue.writeString for ASCII text.
func (b bld) str(s string) bld {
	b = b.u8(byte(len(s) + 1))
	return b.raw([]byte(s)...)
}

// stringSnapshot is StringSerializer's snapshot behind its proxy version.
func (b bld) stringSnapshot() bld {
	return b.i32(2).utf("org.apache.flink.api.common.typeutils.base.StringSerializer$StringSerializerSnapshot").i32(3)
}

// operatorStream writes an operator-state stream of version 5 with one
// list state of strings, and returns it with the offsets of its elements.
func operatorStream(name string, elems ...string) ([]byte, []int64) {
	b := bld(nil).i32(5).u16(1).
		utf(name).i32(int(OperatorList)).
		i32(1).utf("OPERATOR_STATE_DISTRIBUTION_MODE").utf("SPLIT_DISTRIBUTE").
		i32(1).utf(valueSerializerKey).stringSnapshot().
		u16(0)
	var offs []int64
	for _, e := range elems {
		offs = append(offs, int64(len(b)))
		b = b.str(e)
	}
	return b, offs
}

// operatorHandle writes an OperatorStateHandle (tag 4) for one split list
// state whose delegate is the given stream handle.
func (b bld) operatorHandle(name string, offs []int64, stream bld) bld {
	b = b.u8(4).i32(1).utf(name).u8(byte(SplitDistribute)).i32(len(offs))
	for _, o := range offs {
		b = b.i64(o)
	}
	return b.raw(stream...)
}

// metadata writes a _metadata of the given version with one operator of
// parallelism 1 whose only state is the managed operator state handle h.
func metadata(version int, id OperatorID, name, uid string, h bld) bld {
	b := bld(nil).i32(Magic).i32(version).i64(7).i32(0).i32(1)
	if version >= 5 {
		b = b.utf(name).utf(uid)
	}
	b = b.raw(id[:]...).i32(1).i32(128)
	if version == 2 {
		b = b.i32(1).i32(1).i32(0).i64(-1).i32(0)
	} else {
		b = b.u8(0).i32(1).i32(0)
	}
	b = b.i32(1).raw(h...).i32(0).u8(0).u8(0)
	if version >= 3 {
		b = b.i32(0).i32(0)
	}
	if version >= 7 {
		b = b.u8(0)
	}
	return b
}

func wireBuf(b []byte) *wire.Buf { return wire.New(b, 0) }
