package flinkfmt

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
)

// Metadata versions this package writes: those of Flink 1.3 to 2.0
// (MetadataV2Serializer to MetadataV5Serializer). A rewrite keeps the
// version of its input, so that the Flink that wrote it can restore it.
const (
	MinWriteVersion = 2
	MaxWriteVersion = 5
)

// EncodeMetadata encodes m as the _metadata file Flink writes for its
// version, byte for byte as Flink's serializer of that version would. It
// writes every handle the reader keeps whole; it refuses (ErrUnsupported)
// the handles whose fields the reader does not keep: file-merging segments
// and the changelog backend's handles, which only checkpoints hold.
func EncodeMetadata(m *Metadata) ([]byte, error) {
	if m.Version < MinWriteVersion || m.Version > MaxWriteVersion {
		return nil, unsupportedf("writing metadata version %d (this writer writes %d to %d)", m.Version, MinWriteVersion, MaxWriteVersion)
	}
	e := &encoder{version: m.Version}
	e.i32(Magic)
	e.i32(int32(m.Version))
	e.i64(m.CheckpointID)
	e.i32(int32(len(m.Masters)))
	for _, ms := range m.Masters {
		body := &encoder{version: m.Version}
		body.i32(ms.Version)
		body.utf(ms.Name)
		body.sized(ms.Data)
		if body.err != nil {
			return nil, body.err
		}
		e.u32(masterStateMagic)
		e.sized(body.b)
	}
	e.i32(int32(len(m.Operators)))
	for _, op := range m.Operators {
		e.operator(op)
		if e.err != nil {
			return nil, fmt.Errorf("flinkfmt: writing operator %s: %w", op.ID, e.err)
		}
	}
	if m.Version >= 4 {
		// The CheckpointProperties are Java-serialized; Flink reads them
		// up to the end of the file, so they are carried over as bytes.
		if len(m.Properties.Raw) == 0 {
			return nil, fmt.Errorf("flinkfmt: metadata version %d needs its checkpoint properties, and none are recorded", m.Version)
		}
		e.b = append(e.b, m.Properties.Raw...)
	}
	return e.b, e.err
}

// encoder writes Java's DataOutputStream forms, big-endian, with a sticky
// error.
type encoder struct {
	b       []byte
	version int
	err     error
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *encoder) u8(v byte)    { e.b = append(e.b, v) }
func (e *encoder) i32(v int32)  { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *encoder) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *encoder) i64(v int64)  { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }

func (e *encoder) sized(p []byte) {
	e.i32(int32(len(p)))
	e.b = append(e.b, p...)
}

func (e *encoder) utf(s string) {
	var err error
	if e.b, err = appendUTF(e.b, s); err != nil {
		e.fail(err)
	}
}

// appendUTF appends DataOutput.writeUTF's form of s: a u16 byte length and
// modified UTF-8 (NUL as C0 80, characters above U+FFFF as two surrogates
// of three bytes each).
func appendUTF(b []byte, s string) ([]byte, error) {
	at := len(b)
	b = append(b, 0, 0)
	for _, u := range utf16.Encode([]rune(s)) {
		switch {
		case u != 0 && u < 0x80:
			b = append(b, byte(u))
		case u < 0x800:
			b = append(b, 0xC0|byte(u>>6), 0x80|byte(u&0x3F))
		default:
			b = append(b, 0xE0|byte(u>>12), 0x80|byte(u>>6&0x3F), 0x80|byte(u&0x3F))
		}
	}
	n := len(b) - at - 2
	if n > 0xFFFF {
		return b[:at], fmt.Errorf("flinkfmt: a string of %d bytes in modified UTF-8 is longer than the 65535 writeUTF takes", n)
	}
	binary.BigEndian.PutUint16(b[at:], uint16(n))
	return b, nil
}

func (e *encoder) operator(op *Operator) {
	if e.version >= 5 {
		e.utf(op.Name)
		e.utf(op.UID)
	}
	e.b = append(e.b, op.ID[:]...)
	e.i32(int32(op.Parallelism))
	e.i32(int32(op.MaxParallelism))
	if e.version == 2 {
		// The chain length before Flink 1.3, always 1 since.
		e.i32(1)
		if op.Finished {
			e.fail(fmt.Errorf("metadata version 2 cannot record a finished operator"))
			return
		}
		e.i32(int32(len(op.Subtasks)))
	} else {
		e.stream(op.Coordinator)
		if op.Finished {
			e.i32(-1)
			return
		}
		e.i32(int32(len(op.Subtasks)))
	}
	for i := range op.Subtasks {
		st := &op.Subtasks[i]
		if st.Finished {
			if e.version == 2 {
				e.fail(fmt.Errorf("metadata version 2 cannot record finished subtask %d", st.Index))
				return
			}
			e.i32(int32(-st.Index - 1))
			continue
		}
		e.i32(int32(st.Index))
		e.subtask(st)
	}
}

func (e *encoder) subtask(st *Subtask) {
	if e.version == 2 {
		// The duration and the count of legacy states, unused since 1.3.
		e.i64(-1)
		e.i32(0)
	}
	for _, h := range []*OperatorStateHandle{st.ManagedOperator, st.RawOperator} {
		if h == nil {
			e.i32(0)
			continue
		}
		e.i32(1)
		e.operatorHandle(h)
	}
	e.keyed(st.ManagedKeyed)
	e.keyed(st.RawKeyed)
	if e.version >= 3 {
		e.channels(st.InputChannels)
		e.channels(st.ResultSubpartitions)
	}
}

func (e *encoder) stream(s *StreamHandle) {
	if s == nil {
		e.u8(byte(StreamNone))
		return
	}
	switch s.Kind {
	case StreamInline:
		e.u8(byte(s.Kind))
		e.utf(s.Name)
		e.sized(s.Data)
	case StreamFile:
		e.u8(byte(s.Kind))
		e.i64(s.Size)
		e.utf(s.Name)
	case StreamRelativeFile:
		e.u8(byte(s.Kind))
		e.utf(s.Name)
		e.i64(s.Size)
	case StreamKeyGroups:
		if s.KeyGroups == nil {
			e.fail(fmt.Errorf("a key-group stream handle without its key groups"))
			return
		}
		e.u8(byte(s.Kind))
		e.keyGroups(s.KeyGroups)
	default:
		// Segments of file merging (and the tag-17 operator handles whose
		// delegates they always are) carry fields the reader does not keep.
		e.fail(unsupportedf("writing a %s stream handle (file merging)", s.Kind))
	}
}

func (e *encoder) keyGroups(k *KeyedHandle) {
	n := k.KeyGroups.Len()
	if len(k.Offsets) != n {
		e.fail(fmt.Errorf("key groups %v with %d offsets", k.KeyGroups, len(k.Offsets)))
		return
	}
	e.i32(int32(k.KeyGroups.Start))
	e.i32(int32(n))
	for _, o := range k.Offsets {
		e.i64(o)
	}
	e.stream(k.Stream)
}

func (e *encoder) keyed(k *KeyedHandle) {
	if k == nil {
		e.u8(byte(KeyedNone))
		return
	}
	switch k.Kind {
	case KeyedKeyGroups, KeyedSavepointKeyGroups, KeyedKeyGroupsV2:
		e.u8(byte(k.Kind))
		e.keyGroups(k)
		if k.Kind == KeyedKeyGroupsV2 {
			e.utf(k.HandleID)
		}
	case KeyedIncremental, KeyedIncrementalV2:
		e.u8(byte(k.Kind))
		e.i64(k.CheckpointID)
		e.utf(k.BackendID)
		e.i32(int32(k.KeyGroups.Start))
		e.i32(int32(k.KeyGroups.Len()))
		if k.Kind == KeyedIncrementalV2 {
			e.i64(k.CheckpointedSize)
		}
		e.stream(k.Meta)
		e.namedList(k.Shared)
		e.namedList(k.Private)
		if k.Kind == KeyedIncrementalV2 {
			e.utf(k.HandleID)
		}
	default:
		e.fail(unsupportedf("writing a %s keyed state handle (the changelog backend's)", k.Kind))
	}
}

func (e *encoder) namedList(l []NamedHandle) {
	e.i32(int32(len(l)))
	for _, f := range l {
		e.utf(f.LocalPath)
		e.stream(f.Handle)
	}
}

func (e *encoder) operatorHandle(h *OperatorStateHandle) {
	e.u8(4)
	e.i32(int32(len(h.States)))
	for _, s := range h.States {
		e.utf(s.Name)
		e.u8(byte(s.Mode))
		e.i32(int32(len(s.Offsets)))
		for _, o := range s.Offsets {
			e.i64(o)
		}
	}
	e.stream(h.Stream)
}

// channels writes ChannelStateHandleSerializerV1's form, which metadata
// versions 3 to 5 use.
func (e *encoder) channels(l []ChannelHandle) {
	e.i32(int32(len(l)))
	for _, c := range l {
		e.i32(int32(c.Subtask))
		e.i32(c.A)
		e.i32(c.B)
		e.i32(int32(len(c.Offsets)))
		for _, o := range c.Offsets {
			e.i64(o)
		}
		e.i64(c.StateSize)
		e.stream(c.Stream)
	}
}
