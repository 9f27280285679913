package flinkfmt

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/murmur3"

	"github.com/stateproc/stateproc/flinkfmt/internal/javaobj"
	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Magic starts every Flink _metadata file (Checkpoints.HEADER_MAGIC_NUMBER).
const Magic = 0x4960672D

// Metadata versions this package reads, oldest first. Version 1 (Flink 1.1
// and 1.2) is refused, as Flink itself refuses it.
const (
	MinVersion = 2
	MaxVersion = 7
)

const masterStateMagic = 0xC96B1696

// MetadataFile is the name of the metadata file in a savepoint directory.
const MetadataFile = "_metadata"

// maxMetadataSize bounds the _metadata file read into memory.
const maxMetadataSize = 1 << 30

// IsFlink reports whether head, the first bytes of a _metadata file, start
// with Flink's magic.
func IsFlink(head []byte) bool {
	return len(head) >= 4 && head[0] == 0x49 && head[1] == 0x60 && head[2] == 0x67 && head[3] == 0x2D
}

// OperatorID is an operator's 16-byte id, in file order (AbstractID's lower
// then upper half).
type OperatorID [16]byte

func (id OperatorID) String() string { return hex.EncodeToString(id[:]) }

// UIDHash is the OperatorID Flink derives from a uid: murmur3_x64_128 with
// seed 0 of its UTF-8 bytes, in Guava's byte order.
func UIDHash(uid string) OperatorID {
	h1, h2 := murmur3.SeedSum128(0, 0, []byte(uid))
	var id OperatorID
	for i := 0; i < 8; i++ {
		id[i] = byte(h1 >> (8 * i))
		id[8+i] = byte(h2 >> (8 * i))
	}
	return id
}

// MasterState is a checkpoint master's state (from a master hook).
type MasterState struct {
	Name    string
	Version int32
	Data    []byte
}

// Operator is one operator's state in the metadata.
type Operator struct {
	ID OperatorID
	// Name and UID are recorded from metadata version 5 on; empty before.
	Name, UID      string
	Parallelism    int
	MaxParallelism int
	Coordinator    *StreamHandle
	// Finished reports an operator that had finished before the
	// checkpoint (it has no subtask states).
	Finished bool
	Subtasks []Subtask
}

// Subtask is one subtask's state.
type Subtask struct {
	Index int
	// Finished reports a subtask that had finished; it has no state.
	Finished            bool
	ManagedOperator     *OperatorStateHandle
	RawOperator         *OperatorStateHandle
	ManagedKeyed        *KeyedHandle
	RawKeyed            *KeyedHandle
	InputChannels       []ChannelHandle
	ResultSubpartitions []ChannelHandle
}

// Properties are the CheckpointProperties that metadata version 4 and
// later end with, as far as they could be read.
type Properties struct {
	// Type is the class of the checkpoint type: "SavepointType" or
	// "CheckpointType"; empty when not recorded.
	Type string
	// Format is a savepoint's format type, CANONICAL or NATIVE.
	Format string
	// Raw is the Java-serialized CheckpointProperties as recorded, which
	// a writer carries over unchanged.
	Raw []byte
}

// Metadata is a parsed _metadata file.
type Metadata struct {
	Version      int
	CheckpointID int64
	Masters      []MasterState
	Operators    []*Operator
	Properties   Properties
	// Warnings are problems that did not stop reading (the properties did
	// not parse, for example).
	Warnings []string
}

// ReadMetadata reads the _metadata file of dir.
func ReadMetadata(ctx context.Context, dir storage.Dir) (*Metadata, error) {
	f, err := dir.Open(ctx, MetadataFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := f.Size()
	if size > maxMetadataSize {
		return nil, at(MetadataFile, "", -1, -1, unsupportedf("a _metadata of %d bytes is larger than the %d this reader takes", size, maxMetadataSize))
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("flinkfmt: reading %s: %w", MetadataFile, err)
	}
	return ParseMetadata(b)
}

// ParseMetadata parses the bytes of a _metadata file.
func ParseMetadata(b []byte) (*Metadata, error) {
	if !IsFlink(b) {
		return nil, at(MetadataFile, "", -1, 0, &problem{msg: "no Flink metadata magic", kind: []error{ErrNotFlink, savepoint.ErrNotSavepoint}})
	}
	r := wire.New(b, 0)
	r.I32()
	m := &Metadata{Version: int(r.I32())}
	if r.Err() != nil {
		return nil, at(MetadataFile, "", -1, 4, corrupt(r.Err()))
	}
	if m.Version < MinVersion || m.Version > MaxVersion {
		return nil, at(MetadataFile, "", -1, 4, unsupportedf("metadata version %d (this reader takes %d to %d)", m.Version, MinVersion, MaxVersion))
	}
	if err := m.parseBody(r); err != nil {
		off := r.Offset()
		if we := (*wire.Error)(nil); errors.As(err, &we) {
			off = -1 // the error names its offset
		}
		return nil, at(MetadataFile, "", -1, off, err)
	}
	return m, nil
}

func (m *Metadata) parseBody(r *wire.Buf) error {
	m.CheckpointID = r.I64()
	if r.Err() == nil && m.CheckpointID < 0 {
		return corruptf("negative checkpoint id %d", m.CheckpointID)
	}
	n := r.Count("master states", 8)
	for i := 0; i < n && r.Err() == nil; i++ {
		if mg := uint32(r.I32()); mg != masterStateMagic && r.Err() == nil {
			return corruptf("master state %d: magic %#x, want %#x", i, mg, masterStateMagic)
		}
		body := wire.New(r.Sized("master state"), r.Offset())
		ms := MasterState{Version: body.I32(), Name: body.UTF("master state name"), Data: body.Sized("master state data")}
		if err := body.Err(); err != nil {
			return corrupt(err)
		}
		if body.Len() != 0 {
			return corruptf("master state %q: %d bytes follow it", ms.Name, body.Len())
		}
		m.Masters = append(m.Masters, ms)
	}
	h := &handleReader{r: r, version: m.Version}
	n = r.Count("operator states", 24)
	for i := 0; i < n && r.Err() == nil; i++ {
		op := m.operator(h)
		if op != nil {
			m.Operators = append(m.Operators, op)
		}
	}
	if err := r.Err(); err != nil {
		return corrupt(err)
	}
	if m.Version >= 4 && r.Len() > 0 {
		m.parseProperties(r.Rest())
	} else if r.Len() > 0 {
		return corruptf("%d bytes follow the operator states", r.Len())
	}
	return nil
}

func (m *Metadata) operator(h *handleReader) *Operator {
	r := h.r
	op := &Operator{}
	if m.Version >= 5 {
		op.Name = r.UTF("operator name")
		op.UID = r.UTF("operator uid")
	}
	copy(op.ID[:], r.Raw(16, "operator id"))
	op.Parallelism = int(r.I32())
	op.MaxParallelism = int(r.I32())
	if r.Err() != nil {
		return nil
	}
	// Flink's OperatorState refuses a parallelism above the max
	// parallelism, and its key-group assignment one above 2^15.
	if op.Parallelism < 0 || op.MaxParallelism < 0 || op.Parallelism > op.MaxParallelism || op.MaxParallelism > keygroup.MaxParallelismLimit {
		r.Failf(wire.ErrMalformed, "operator %s: parallelism %d, max parallelism %d", op.ID, op.Parallelism, op.MaxParallelism)
		return nil
	}
	n := 0
	if m.Version == 2 {
		if chain := r.I32(); chain != 1 && r.Err() == nil {
			r.Failf(wire.ErrMalformed, "operator %s: chain length %d, want 1", op.ID, chain)
			return nil
		}
		n = r.Count("subtask states", 8)
	} else {
		op.Coordinator = h.stream()
		c := r.I32()
		if c == -1 {
			op.Finished = true
			return op
		}
		if r.Err() == nil && (c < 0 || int64(c)*4 > int64(r.Len())) {
			r.Failf(wire.ErrMalformed, "operator %s: %d subtask states", op.ID, c)
			return nil
		}
		n = int(c)
	}
	for i := 0; i < n && r.Err() == nil; i++ {
		idx := int(r.I32())
		st := Subtask{Index: idx}
		if idx < 0 {
			if m.Version == 2 {
				r.Failf(wire.ErrMalformed, "operator %s: negative subtask index %d", op.ID, idx)
				return nil
			}
			st.Index, st.Finished = -idx-1, true
		}
		// Flink's OperatorState.putState refuses an index past the
		// parallelism.
		if st.Index >= op.Parallelism {
			r.Failf(wire.ErrMalformed, "operator %s: subtask %d of parallelism %d", op.ID, st.Index, op.Parallelism)
			return nil
		}
		if !st.Finished {
			m.subtask(h, &st)
			checkKeyGroups(r, op, &st)
		}
		op.Subtasks = append(op.Subtasks, st)
	}
	return op
}

// checkKeyGroups holds a subtask's key-group handles to the operator's max
// parallelism: a key group past it is in no key-group range Flink assigns.
func checkKeyGroups(r *wire.Buf, op *Operator, st *Subtask) {
	for _, k := range []*KeyedHandle{st.ManagedKeyed, st.RawKeyed} {
		if k == nil || r.Err() != nil || k.KeyGroups.End < k.KeyGroups.Start {
			continue
		}
		if k.KeyGroups.End >= op.MaxParallelism {
			r.Failf(wire.ErrMalformed, "operator %s: subtask %d holds key groups %d to %d, past max parallelism %d",
				op.ID, st.Index, k.KeyGroups.Start, k.KeyGroups.End, op.MaxParallelism)
		}
	}
}

func (m *Metadata) subtask(h *handleReader, st *Subtask) {
	r := h.r
	if m.Version == 2 {
		r.I64()
		if legacy := r.I32(); legacy != 0 && r.Err() == nil {
			r.Failf(wire.ErrMalformed, "subtask %d: %d legacy states, want 0", st.Index, legacy)
			return
		}
	}
	if r.I32() != 0 {
		st.ManagedOperator = h.operator()
	}
	if r.I32() != 0 {
		st.RawOperator = h.operator()
	}
	st.ManagedKeyed = h.keyed()
	st.RawKeyed = h.keyed()
	if m.Version >= 3 {
		st.InputChannels = h.channels(false)
		st.ResultSubpartitions = h.channels(true)
	}
	if m.Version >= 7 {
		if r.U8() == 1 {
			r.I64()
		}
	}
}

// parseProperties reads the Java-serialized CheckpointProperties for the
// checkpoint type; a failure is a warning, as nothing else depends on it.
func (m *Metadata) parseProperties(b []byte) {
	m.Properties.Raw = b
	v, n, err := javaobj.Parse(b, javaobj.Limits{MaxDepth: 16, MaxValues: 4096})
	if err != nil {
		m.Warnings = append(m.Warnings, fmt.Sprintf("checkpoint properties: %v", err))
		return
	}
	if n != len(b) {
		m.Warnings = append(m.Warnings, fmt.Sprintf("checkpoint properties: %d bytes follow them", len(b)-n))
	}
	o, ok := v.(*javaobj.Object)
	if !ok {
		return
	}
	ct, _ := o.Field("checkpointType")
	t, ok := ct.(*javaobj.Object)
	if !ok {
		return
	}
	m.Properties.Type = t.Class.Name[strings.LastIndexByte(t.Class.Name, '.')+1:]
	if f, ok := t.Field("formatType"); ok {
		if e, ok := f.(*javaobj.Enum); ok {
			m.Properties.Format = e.Constant
		}
	}
}
