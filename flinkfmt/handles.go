package flinkfmt

import (
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/keygroup"
)

// StreamKind is the kind of a StreamStateHandle.
type StreamKind uint8

// Stream handle kinds, by their tag in the metadata.
const (
	StreamNone         StreamKind = 0
	StreamInline       StreamKind = 1  // ByteStreamStateHandle
	StreamFile         StreamKind = 2  // FileStateHandle: an absolute path
	StreamKeyGroups    StreamKind = 3  // a KeyGroupsStateHandle used as a stream
	StreamRelativeFile StreamKind = 6  // RelativeFileStateHandle
	StreamSegment      StreamKind = 15 // SegmentFileStateHandle (file merging)
	StreamEmptySegment StreamKind = 16 // EmptySegmentFileStateHandle
)

func (k StreamKind) String() string {
	switch k {
	case StreamNone:
		return "none"
	case StreamInline:
		return "inline"
	case StreamFile:
		return "file"
	case StreamKeyGroups:
		return "key-groups"
	case StreamRelativeFile:
		return "relative-file"
	case StreamSegment:
		return "segment"
	case StreamEmptySegment:
		return "empty-segment"
	}
	return fmt.Sprintf("stream(%d)", uint8(k))
}

// StreamHandle locates a byte stream of state.
type StreamHandle struct {
	Kind StreamKind
	// Name is the inline handle's name, or the path of a file (absolute for
	// StreamFile and StreamSegment, relative to the savepoint directory for
	// StreamRelativeFile).
	Name string
	// Data holds an inline handle's bytes.
	Data []byte
	// Offset is where a segment starts in its file; 0 otherwise.
	Offset int64
	Size   int64
	// Shared reports a segment in the shared scope.
	Shared bool
	// KeyGroups is set for StreamKeyGroups.
	KeyGroups *KeyedHandle
}

// KeyedKind is the kind of a KeyedStateHandle, by its tag.
type KeyedKind uint8

// Keyed handle tags.
const (
	KeyedNone                    KeyedKind = 0
	KeyedKeyGroups               KeyedKind = 3
	KeyedIncremental             KeyedKind = 5
	KeyedSavepointKeyGroups      KeyedKind = 7
	KeyedChangelog               KeyedKind = 8
	KeyedChangelogByteIncrement  KeyedKind = 9
	KeyedChangelogFileIncrement  KeyedKind = 10
	KeyedIncrementalV2           KeyedKind = 11
	KeyedKeyGroupsV2             KeyedKind = 12
	KeyedChangelogFileIncrement2 KeyedKind = 13
	KeyedChangelogV2             KeyedKind = 14
)

var keyedNames = map[KeyedKind]string{
	KeyedNone: "none", KeyedKeyGroups: "KEY_GROUPS_HANDLE", KeyedIncremental: "INCREMENTAL_KEY_GROUPS_HANDLE",
	KeyedSavepointKeyGroups: "SAVEPOINT_KEY_GROUPS_HANDLE", KeyedChangelog: "CHANGELOG_HANDLE",
	KeyedChangelogByteIncrement: "CHANGELOG_BYTE_INCREMENT_HANDLE", KeyedChangelogFileIncrement: "CHANGELOG_FILE_INCREMENT_HANDLE",
	KeyedIncrementalV2: "INCREMENTAL_KEY_GROUPS_HANDLE_V2", KeyedKeyGroupsV2: "KEY_GROUPS_HANDLE_V2",
	KeyedChangelogFileIncrement2: "CHANGELOG_FILE_INCREMENT_HANDLE_V2", KeyedChangelogV2: "CHANGELOG_HANDLE_V2",
}

func (k KeyedKind) String() string {
	if s, ok := keyedNames[k]; ok {
		return s
	}
	return fmt.Sprintf("keyed-handle(%d)", uint8(k))
}

// NamedHandle is a file of an incremental RocksDB handle.
type NamedHandle struct {
	LocalPath string
	Handle    *StreamHandle
}

// KeyedHandle is a KeyedStateHandle: keyed state of one subtask.
type KeyedHandle struct {
	Kind      KeyedKind
	KeyGroups keygroup.Range
	// Offsets holds, for key-group handles, the position of each key group
	// of KeyGroups in Stream (0 for an empty key group in the canonical
	// layout).
	Offsets  []int64
	Stream   *StreamHandle
	HandleID string

	// Incremental RocksDB handles.
	CheckpointID     int64
	BackendID        string
	CheckpointedSize int64
	Meta             *StreamHandle
	Shared, Private  []NamedHandle

	// Changelog handles.
	Materialized, NonMaterialized []*KeyedHandle
	MaterializationID             int64
	StateSize                     int64
	Increments                    []NamedHandle
}

// Size is the number of bytes the handle refers to, as recorded.
func (h *KeyedHandle) Size() int64 {
	if h == nil {
		return 0
	}
	var n int64
	n += h.Stream.size()
	n += h.Meta.size()
	for _, l := range [][]NamedHandle{h.Shared, h.Private, h.Increments} {
		for _, f := range l {
			n += f.Handle.size()
		}
	}
	for _, l := range [][]*KeyedHandle{h.Materialized, h.NonMaterialized} {
		for _, c := range l {
			n += c.Size()
		}
	}
	return n
}

func (s *StreamHandle) size() int64 {
	if s == nil {
		return 0
	}
	return s.Size
}

// Distribution is how operator list state is redistributed.
type Distribution uint8

// Operator state modes (OperatorStateHandle.Mode).
const (
	SplitDistribute Distribution = 0
	Union           Distribution = 1
	Broadcast       Distribution = 2
)

func (d Distribution) String() string {
	switch d {
	case SplitDistribute:
		return "split"
	case Union:
		return "union"
	case Broadcast:
		return "broadcast"
	}
	return fmt.Sprintf("mode(%d)", uint8(d))
}

// OperatorStateHandle locates the operator states of one subtask.
type OperatorStateHandle struct {
	// States are the named states with the offsets of their elements (of
	// the one map for broadcast state) in Stream.
	States []OperatorStateOffsets
	Stream *StreamHandle
}

// OperatorStateOffsets is one named state of an OperatorStateHandle.
type OperatorStateOffsets struct {
	Name    string
	Mode    Distribution
	Offsets []int64
}

// ChannelHandle is in-flight data of an unaligned checkpoint.
type ChannelHandle struct {
	Output    bool // a result subpartition rather than an input channel
	Subtask   int
	A, B      int32 // gate and channel, or partition and subpartition
	Offsets   []int64
	StateSize int64
	Stream    *StreamHandle
}

// handleReader reads handles with the limits of the metadata version.
type handleReader struct {
	r       *wire.Buf
	version int
	depth   int
}

func (h *handleReader) stream() *StreamHandle {
	r := h.r
	start := r.Offset()
	tag := StreamKind(r.U8())
	if r.Err() != nil {
		return nil
	}
	s := &StreamHandle{Kind: tag}
	switch tag {
	case StreamNone:
		return nil
	case StreamInline:
		s.Name = r.UTF("inline handle name")
		s.Data = r.Sized("inline handle data")
		s.Size = int64(len(s.Data))
	case StreamFile:
		s.Size = r.I64()
		s.Name = r.UTF("file path")
	case StreamRelativeFile:
		s.Name = r.UTF("relative path")
		s.Size = r.I64()
	case StreamKeyGroups:
		s.KeyGroups = h.keyGroups(KeyedKeyGroups)
		if s.KeyGroups != nil {
			s.Size = s.KeyGroups.Stream.size()
		}
	case StreamSegment:
		s.Offset = r.I64()
		s.Size = r.I64()
		scope := r.I32()
		s.Shared = scope == 1
		s.Name = r.UTF("segment file path")
		r.UTF("logical file id")
		if r.Err() == nil && scope != 0 && scope != 1 {
			r.Failf(wire.ErrMalformed, "segment scope %d", scope)
		}
	case StreamEmptySegment:
	default:
		r.Fail(fmt.Sprintf("stream state handle at offset %d", start), fmt.Errorf("%w: unknown tag %d", wire.ErrMalformed, tag))
		return nil
	}
	if r.Err() == nil && s.Size < 0 {
		r.Failf(wire.ErrMalformed, "stream handle size %d", s.Size)
	}
	return s
}

// keyGroups reads the body shared by tags 3, 7 and 12.
func (h *handleReader) keyGroups(kind KeyedKind) *KeyedHandle {
	r := h.r
	k := &KeyedHandle{Kind: kind}
	start, n := r.I32(), r.Count("key group count", 8)
	if r.Err() != nil {
		return nil
	}
	if start < 0 || int64(start)+int64(n) > keygroup.MaxParallelismLimit {
		r.Failf(wire.ErrMalformed, "key groups %d to %d", start, int64(start)+int64(n)-1)
		return nil
	}
	k.KeyGroups = keygroup.Range{Start: int(start), End: int(start) + n - 1}
	k.Offsets = make([]int64, n)
	for i := range k.Offsets {
		k.Offsets[i] = r.I64()
		if r.Err() == nil && k.Offsets[i] < 0 {
			r.Failf(wire.ErrMalformed, "key group %d at negative offset %d", int(start)+i, k.Offsets[i])
		}
	}
	k.Stream = h.nestedStream()
	return k
}

func (h *handleReader) nestedStream() *StreamHandle {
	if h.depth >= maxHandleDepth {
		h.r.Failf(wire.ErrMalformed, "state handles nest deeper than %d", maxHandleDepth)
		return nil
	}
	h.depth++
	defer func() { h.depth-- }()
	return h.stream()
}

// maxHandleDepth bounds how deeply handles nest (changelog handles hold
// keyed handles that hold stream handles).
const maxHandleDepth = 8

func (h *handleReader) keyed() *KeyedHandle {
	r := h.r
	start := r.Offset()
	tag := KeyedKind(r.U8())
	if r.Err() != nil {
		return nil
	}
	switch tag {
	case KeyedNone:
		return nil
	case KeyedKeyGroups, KeyedSavepointKeyGroups, KeyedKeyGroupsV2:
		k := h.keyGroups(tag)
		if k != nil && tag == KeyedKeyGroupsV2 {
			k.HandleID = r.UTF("state handle id")
		}
		return k
	case KeyedIncremental, KeyedIncrementalV2:
		k := &KeyedHandle{Kind: tag}
		k.CheckpointID = r.I64()
		k.BackendID = r.UTF("backend id")
		k.KeyGroups = h.rangeOf()
		if tag == KeyedIncrementalV2 {
			k.CheckpointedSize = r.I64()
		}
		k.Meta = h.nestedStream()
		k.Shared = h.namedList("shared files")
		k.Private = h.namedList("private files")
		if tag == KeyedIncrementalV2 {
			k.HandleID = r.UTF("state handle id")
		}
		return k
	case KeyedChangelog, KeyedChangelogV2:
		k := &KeyedHandle{Kind: tag}
		k.KeyGroups = h.rangeOf()
		k.CheckpointedSize = r.I64()
		k.Materialized = h.keyedList("materialized handles")
		k.NonMaterialized = h.keyedList("non-materialized handles")
		k.MaterializationID = r.I64()
		if tag == KeyedChangelogV2 {
			k.CheckpointID = r.I64()
		}
		k.HandleID = r.UTF("state handle id")
		return k
	case KeyedChangelogByteIncrement:
		k := &KeyedHandle{Kind: tag}
		k.KeyGroups = h.rangeOf()
		r.I64()
		r.I64()
		n := r.Count("changes", 8)
		for i := 0; i < n && r.Err() == nil; i++ {
			kg := r.I32()
			b := r.Sized("change")
			k.Increments = append(k.Increments, NamedHandle{LocalPath: fmt.Sprintf("key group %d", kg), Handle: &StreamHandle{Kind: StreamInline, Data: b, Size: int64(len(b))}})
		}
		k.HandleID = r.UTF("state handle id")
		return k
	case KeyedChangelogFileIncrement, KeyedChangelogFileIncrement2:
		k := &KeyedHandle{Kind: tag}
		k.KeyGroups = h.rangeOf()
		n := r.Count("changelog files", 9)
		for i := 0; i < n && r.Err() == nil; i++ {
			off := r.I64()
			k.Increments = append(k.Increments, NamedHandle{LocalPath: fmt.Sprintf("offset %d", off), Handle: h.nestedStream()})
		}
		k.StateSize = r.I64()
		k.CheckpointedSize = r.I64()
		k.HandleID = r.UTF("state handle id")
		if tag == KeyedChangelogFileIncrement2 {
			r.UTF("storage identifier")
		}
		return k
	}
	r.Fail(fmt.Sprintf("keyed state handle at offset %d", start), fmt.Errorf("%w: unknown tag %d", wire.ErrMalformed, tag))
	return nil
}

func (h *handleReader) rangeOf() keygroup.Range {
	r := h.r
	start, n := r.I32(), r.I32()
	if r.Err() == nil && (start < 0 || n < 0 || int64(start)+int64(n) > keygroup.MaxParallelismLimit) {
		r.Failf(wire.ErrMalformed, "key groups %d, count %d", start, n)
	}
	return keygroup.Range{Start: int(start), End: int(start) + int(n) - 1}
}

func (h *handleReader) namedList(what string) []NamedHandle {
	n := h.r.Count(what, 3)
	out := make([]NamedHandle, 0, n)
	for i := 0; i < n && h.r.Err() == nil; i++ {
		out = append(out, NamedHandle{LocalPath: h.r.UTF("local path"), Handle: h.nestedStream()})
	}
	return out
}

func (h *handleReader) keyedList(what string) []*KeyedHandle {
	n := h.r.Count(what, 1)
	out := make([]*KeyedHandle, 0, n)
	if h.depth >= maxHandleDepth {
		h.r.Failf(wire.ErrMalformed, "state handles nest deeper than %d", maxHandleDepth)
		return nil
	}
	h.depth++
	defer func() { h.depth-- }()
	for i := 0; i < n && h.r.Err() == nil; i++ {
		out = append(out, h.keyed())
	}
	return out
}

func (h *handleReader) operator() *OperatorStateHandle {
	r := h.r
	start := r.Offset()
	tag := r.U8()
	if r.Err() != nil || tag == 0 {
		return nil
	}
	if tag != 4 && tag != 17 {
		r.Fail(fmt.Sprintf("operator state handle at offset %d", start), fmt.Errorf("%w: unknown tag %d", wire.ErrMalformed, tag))
		return nil
	}
	o := &OperatorStateHandle{}
	n := r.Count("operator states", 7)
	for i := 0; i < n && r.Err() == nil; i++ {
		s := OperatorStateOffsets{Name: r.UTF("operator state name"), Mode: Distribution(r.U8())}
		if r.Err() == nil && s.Mode > Broadcast {
			r.Failf(wire.ErrMalformed, "operator state %q has mode %d", s.Name, s.Mode)
		}
		m := r.Count("operator state offsets", 8)
		s.Offsets = make([]int64, m)
		for j := range s.Offsets {
			s.Offsets[j] = r.I64()
		}
		o.States = append(o.States, s)
	}
	if tag == 17 {
		r.UTF("task-owned directory")
		r.UTF("shared directory")
		r.Bool()
	}
	o.Stream = h.nestedStream()
	return o
}

func (h *handleReader) channels(output bool) []ChannelHandle {
	r := h.r
	n := r.Count("channel state handles", 9)
	var out []ChannelHandle
	for i := 0; i < n && r.Err() == nil; i++ {
		c := ChannelHandle{Output: output}
		if h.version >= 6 {
			typ := r.U8()
			switch typ {
			case 1, 2:
			case 3, 4:
				c.Subtask = int(r.I32())
				c.StateSize = r.I64()
				c.Stream = h.nestedStream()
				r.Sized("merged channel offsets")
				out = append(out, c)
				continue
			default:
				if r.Err() == nil {
					r.Failf(wire.ErrMalformed, "channel state handle type %d", typ)
				}
				return nil
			}
		}
		c.Subtask = int(r.I32())
		c.A, c.B = r.I32(), r.I32()
		m := r.Count("channel offsets", 8)
		c.Offsets = make([]int64, m)
		for j := range c.Offsets {
			c.Offsets[j] = r.I64()
		}
		c.StateSize = r.I64()
		c.Stream = h.nestedStream()
		out = append(out, c)
	}
	return out
}
