package flinkfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/savepoint"
)

// Layout is how a keyed state handle lays out its entries.
type Layout string

// Keyed layouts.
const (
	// LayoutCanonical is the unified savepoint layout (FLIP-41) that both
	// backends write for canonical savepoints, and RocksDB for full
	// snapshots: framed key/value pairs per key group.
	LayoutCanonical Layout = "canonical"
	// LayoutHeap is the heap backend's own layout (checkpoints, native
	// savepoints, savepoints before Flink 1.13): unframed values per state
	// per key group.
	LayoutHeap Layout = "heap"
	// LayoutRocksDBNative is RocksDB's incremental and native layout: SST
	// files.
	LayoutRocksDBNative Layout = "native RocksDB"
	// LayoutChangelog is the changelog state backend's layout.
	LayoutChangelog Layout = "changelog"
)

// canonical layout constants (FullSnapshotUtil).
const (
	metaFollowsFlag = 0x80
	endOfKeyGroup   = 0xFFFF
	listDelimiter   = ','
)

// Entry is one entry of a keyed state or timer service in the model of
// savepoint.Entry: one per value, list element, map entry or timer. Value
// holds, for a state with TTL, the 8-byte last-access timestamp followed by
// the value, exactly as Flink's TtlValue stores it. Timers have their
// timestamp in Timestamp and no value.
type Entry struct {
	savepoint.Entry
	// State indexes Keyed.States.
	State int
	// Null reports a map entry whose value is null.
	Null bool
}

// Warning is a part of a key group that could not be walked and was
// skipped, listed as opaque bytes.
type Warning struct {
	KeyGroup int
	// File is where the bytes are, and Offset and Length where in it (in
	// the decompressed stream of the key group when Compressed).
	File       string
	Offset     int64
	Length     int64
	Compressed bool
	// State is the state whose value stopped the walk, Serializer the
	// serializer (snapshot) class that gives no length and Class the class
	// it writes.
	State      string
	Serializer string
	Class      string
	Message    string
}

func (w Warning) String() string {
	return fmt.Sprintf("%s: key group %d: %d bytes at offset %d not walked (state %q): %s", w.File, w.KeyGroup, w.Length, w.Offset, w.State, w.Message)
}

// Keyed is an operator's keyed state: the key serializer and the states
// of its subtasks' keyed-stream headers.
type Keyed struct {
	Operator *Operator
	Key      *typeser.Serializer
	// States are the states by name, in the order they first appear in the
	// subtasks' headers.
	States []*StateMeta
	// Layouts counts the subtask handles by layout.
	Layouts map[Layout]int
	// Compressed reports that some subtask's state is Snappy-compressed.
	Compressed bool
	// Notes are parts that were not read and why: raw keyed state that is
	// not timers.
	Notes    []string
	subtasks []*subtaskKeyed
	r        *Reader
}

type subtaskKeyed struct {
	index  int
	handle *KeyedHandle
	layout Layout
	header *KeyedHeader
	// ids maps the header's state ids to Keyed.States.
	ids []int
	// file names the stream for errors.
	file string
	// sorted and streamLen serve spanEnd.
	spanMu    sync.Mutex
	sorted    []int64
	streamLen int64
	// native holds a native handle's files; notes what of it is not read.
	native *nativeFiles
	notes  []string
	// parts holds, per key group of a canonical handle walked to its end,
	// where each state id's entries lie in it, so that reading one state
	// reads only its own bytes; nil until then.
	partsMu sync.Mutex
	parts   [][]stateSpan
}

// stateSpan is where one state's entries lie in a canonical key group (in
// its decompressed bytes): from its first key's length to its last value's
// end; start < 0 when the key group holds none.
type stateSpan struct{ start, end int }

// knownParts returns where the state ids' entries lie in key group i, or
// nil when it has not been walked yet.
func (sk *subtaskKeyed) knownParts(i int) []stateSpan {
	sk.partsMu.Lock()
	defer sk.partsMu.Unlock()
	if sk.parts == nil {
		return nil
	}
	return sk.parts[i]
}

func (sk *subtaskKeyed) learnParts(i int, parts []stateSpan) {
	sk.partsMu.Lock()
	defer sk.partsMu.Unlock()
	if sk.parts == nil {
		sk.parts = make([][]stateSpan, len(sk.handle.Offsets))
	}
	sk.parts[i] = parts
}

// HandleLayout is the layout a keyed handle's tag records, or "" for the
// key-group handles of tags 3 and 12, which both the heap and the RocksDB
// backend write.
func HandleLayout(h *KeyedHandle) Layout {
	if h == nil {
		return ""
	}
	switch h.Kind {
	case KeyedSavepointKeyGroups:
		return LayoutCanonical
	case KeyedIncremental, KeyedIncrementalV2:
		return LayoutRocksDBNative
	case KeyedChangelog, KeyedChangelogV2, KeyedChangelogByteIncrement, KeyedChangelogFileIncrement, KeyedChangelogFileIncrement2:
		return LayoutChangelog
	}
	return ""
}

// ErrNotKeyed is returned by Reader.Keyed for an operator without keyed
// state.
var ErrNotKeyed = errors.New("flinkfmt: operator has no keyed state")

// Keyed reads the headers of an operator's managed keyed state.
func (r *Reader) Keyed(ctx context.Context, op *Operator) (*Keyed, error) {
	k := &Keyed{Operator: op, Layouts: map[Layout]int{}, r: r}
	byName := map[string]int{}
	sks, errs := r.keyedHeaders(ctx, op)
	for i, sk := range sks {
		if errs[i] != nil {
			return nil, at(sk.file, op.ID.String(), -1, -1, errs[i])
		}
		k.Layouts[sk.layout]++
		for _, n := range sk.notes {
			k.Notes = append(k.Notes, fmt.Sprintf("subtask %d: %s", sk.index, n))
		}
		if sk.header != nil {
			if k.Key == nil {
				k.Key = sk.header.Key
			}
			k.Compressed = k.Compressed || sk.header.Compressed
			for _, m := range sk.header.States {
				i, ok := byName[m.Name]
				if !ok {
					i = len(k.States)
					byName[m.Name] = i
					k.States = append(k.States, m)
				}
				sk.ids = append(sk.ids, i)
			}
		}
		k.subtasks = append(k.subtasks, sk)
	}
	for _, st := range op.Subtasks {
		h := st.RawKeyed
		if h == nil || h.Kind != KeyedKeyGroups && h.Kind != KeyedKeyGroupsV2 {
			continue
		}
		sk := &subtaskKeyed{index: st.Index, handle: h, layout: LayoutRawTimers}
		if err := r.addRawTimers(ctx, k, sk, byName); err != nil {
			var versioned bool
			if len(h.Offsets) > 0 && h.Stream != nil {
				head, _, herr := r.streamBytes(ctx, h.Stream, h.Offsets[0], min(4, r.spanEnd(h, h.Offsets[0], sk)-h.Offsets[0]))
				versioned = herr == nil && bytes.Equal(head, timerServiceMagic)
			}
			if versioned {
				return nil, at(sk.file, op.ID.String(), h.KeyGroups.Start, -1, fmt.Errorf("raw keyed state: %w", err))
			}
			// Without the timer services' marker the bytes may be an
			// operator's own raw keyed state, which only its code reads.
			k.Notes = append(k.Notes, fmt.Sprintf("subtask %d: raw keyed state of %d bytes that is not timers (%v): not read", st.Index, h.Size(), err))
			continue
		}
		if len(sk.ids) > 0 {
			k.Layouts[LayoutRawTimers]++
			k.subtasks = append(k.subtasks, sk)
		}
	}
	if len(k.subtasks) == 0 && len(k.Notes) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotKeyed, op.ID)
	}
	sort.Slice(k.subtasks, func(i, j int) bool {
		return k.subtasks[i].handle.KeyGroups.Start < k.subtasks[j].handle.KeyGroups.Start
	})
	return k, nil
}

// headersInFlight bounds the subtasks whose headers keyedHeaders reads at
// once.
const headersInFlight = 16

// keyedHeaders reads the headers of the subtasks' managed keyed state, in
// subtask order, with the error of each. They are read several at a time:
// in a bucket each is a request or two, which an operator of many subtasks
// would otherwise make one after another.
func (r *Reader) keyedHeaders(ctx context.Context, op *Operator) ([]*subtaskKeyed, []error) {
	var sks []*subtaskKeyed
	for _, st := range op.Subtasks {
		if h := st.ManagedKeyed; h != nil {
			sks = append(sks, &subtaskKeyed{index: st.Index, handle: h})
		}
	}
	errs := make([]error, len(sks))
	// Each keeps its error, so that the first in subtask order is
	// reported, whatever the timing; the files opened keep ctx.
	workers.Run(ctx, len(sks), headersInFlight, func(_ context.Context, _, i int) error {
		errs[i] = r.keyedHeader(ctx, sks[i], op)
		return nil
	})
	return sks, errs
}

// State returns the index of the named state, or -1.
func (k *Keyed) State(name string) int {
	for i, m := range k.States {
		if m.Name == name {
			return i
		}
	}
	return -1
}

func (r *Reader) keyedHeader(ctx context.Context, sk *subtaskKeyed, op *Operator) error {
	h := sk.handle
	switch h.Kind {
	case KeyedIncremental, KeyedIncrementalV2:
		sk.layout = LayoutRocksDBNative
		if h.Meta == nil {
			return corruptf("native handle without its metadata stream")
		}
		b, name, err := r.streamBytes(ctx, h.Meta, 0, -1)
		sk.file = name
		if err != nil {
			return err
		}
		if sk.header, err = ParseKeyedHeader(wire.New(b, 0)); err != nil {
			return err
		}
		if sk.header.End != int64(len(b)) {
			return corruptf("%d bytes follow the keyed state header of a native handle", int64(len(b))-sk.header.End)
		}
		sk.native, sk.notes, err = classifyNative(h)
		return err
	case KeyedChangelog, KeyedChangelogV2, KeyedChangelogByteIncrement, KeyedChangelogFileIncrement, KeyedChangelogFileIncrement2:
		sk.layout = LayoutChangelog
		return nil
	}
	if h.Stream == nil {
		return corruptf("key-group handle without a stream")
	}
	var minOff int64 = -1
	for _, o := range h.Offsets {
		if o > 0 && (minOff < 0 || o < minOff) {
			minOff = o
		}
	}
	b, name, err := r.streamBytes(ctx, h.Stream, 0, minOff)
	sk.file = name
	if err != nil {
		return err
	}
	hdr, err := ParseKeyedHeader(wire.New(b, 0))
	if err != nil {
		return err
	}
	sk.header = hdr
	if minOff >= 0 && hdr.End != minOff {
		return corruptf("the keyed state header ends at %d, the first key group starts at %d", hdr.End, minOff)
	}
	if h.Kind == KeyedSavepointKeyGroups {
		sk.layout = LayoutCanonical
		return nil
	}
	return r.sniffLayout(ctx, sk, op)
}

// sniffLayout tells heap from canonical for handles of tags 3 and 12,
// which do not record it. A compressed canonical key group starts with the
// Snappy stream identifier, a heap one with its key group number; an
// uncompressed heap key group starts with its number too, while a
// canonical one starts with a state id and a key length, which read as
// that number only for key group 0, so another key group decides.
func (r *Reader) sniffLayout(ctx context.Context, sk *subtaskKeyed, op *Operator) error {
	h := sk.handle
	decided := false
	for i, off := range h.Offsets {
		kg := h.KeyGroups.Start + i
		if off == 0 {
			sk.layout, decided = LayoutCanonical, true
			break
		}
		if kg == 0 && !sk.header.Compressed {
			continue
		}
		b, _, err := r.streamBytes(ctx, h.Stream, off, min(10, r.spanEnd(h, off, sk)-off))
		if err != nil {
			return err
		}
		switch {
		case sk.header.Compressed && bytes.HasPrefix(b, snappyMagic):
			sk.layout = LayoutCanonical
		case len(b) >= 4 && int(binary.BigEndian.Uint32(b)) == kg:
			sk.layout = LayoutHeap
		default:
			sk.layout = LayoutCanonical
		}
		decided = true
		break
	}
	if !decided && len(h.Offsets) > 0 {
		// Only key group 0, uncompressed: whichever layout parses it.
		sk.layout = LayoutCanonical
		d, err := r.readKeyGroup(ctx, sk, 0, h.KeyGroups.Start, LayoutCanonical, nil, nil)
		if err != nil {
			return err
		}
		k := &Keyed{Key: sk.header.Key, States: sk.header.States, r: r, Operator: op}
		probe := &subtaskKeyed{handle: h, header: sk.header, layout: LayoutCanonical}
		for i := range sk.header.States {
			probe.ids = append(probe.ids, i)
		}
		var sink []Entry
		p := &kgParser{k: k, sk: probe, kg: h.KeyGroups.Start, state: -1, out: &sink, prefix: prefixLen(k.Operator.MaxParallelism)}
		if cerr := p.canonical(wire.New(d.b, 0)); cerr != nil {
			sink = sink[:0]
			herr := p.heap(wire.New(d.b, 0))
			if herr != nil {
				// A sound key group parses in one of them: calling it
				// canonical would pass a damaged heap snapshot off as
				// one that needs no conversion.
				return corruptf("key group %d at offset %d parses in neither layout: as canonical, %v; as heap, %v",
					h.KeyGroups.Start, h.Offsets[0], cerr, herr)
			}
			sk.layout = LayoutHeap
		}
	}
	return nil
}

// spanEnd is where the key group at off ends: the next larger offset of
// the handle, or the end of the stream. The sorted offsets and the stream's
// length are found once per handle, so that walking every key group of a
// handle costs n log n, not n².
func (r *Reader) spanEnd(h *KeyedHandle, off int64, sk *subtaskKeyed) int64 {
	// Iterators over the same handle run on several goroutines.
	sk.spanMu.Lock()
	defer sk.spanMu.Unlock()
	if sk.sorted == nil {
		sk.sorted = append([]int64(nil), h.Offsets...)
		sort.Slice(sk.sorted, func(i, j int) bool { return sk.sorted[i] < sk.sorted[j] })
		sk.streamLen = -1
	}
	if i := sort.Search(len(sk.sorted), func(i int) bool { return sk.sorted[i] > off }); i < len(sk.sorted) {
		return sk.sorted[i]
	}
	if sk.streamLen < 0 {
		n, _, err := r.streamSize(context.Background(), h.Stream)
		if err != nil {
			return off
		}
		sk.streamLen = n
	}
	return sk.streamLen
}

// keyGroupStart is the start of the key group of sk's handle that holds
// the byte before end, or end itself where a key group starts there or
// the stream ends; spanEnd has found the sorted offsets (and the stream's
// length, when a key group ends there).
func keyGroupStart(end int64, sk *subtaskKeyed) int64 {
	sk.spanMu.Lock()
	defer sk.spanMu.Unlock()
	if sk.streamLen >= 0 && end >= sk.streamLen {
		return sk.streamLen
	}
	i := sort.Search(len(sk.sorted), func(i int) bool { return sk.sorted[i] > end })
	if i == 0 {
		return end
	}
	return sk.sorted[i-1]
}

// keyGroupData is one key group's bytes, decompressed.
type keyGroupData struct {
	b          []byte
	base       int64 // offset of b[0] in the file, when not compressed
	compressed bool
}

// kgBuffers is the memory a walk of many key groups reads and decompresses
// them into, one key group at a time; from a bucket, it reads the next key
// groups with the one asked for, into win.
type kgBuffers struct {
	raw []byte
	un  unsnappier
	win window
}

// readKeyGroup reads key group kg (index i of the subtask's handle), into
// bufs when it is not nil, where the bytes stay valid until the next read.
// With part set, and the key group not compressed, only the bytes
// [part.start, part.end) of it are read.
func (r *Reader) readKeyGroup(ctx context.Context, sk *subtaskKeyed, i, kg int, layout Layout, bufs *kgBuffers, part *stateSpan) (*keyGroupData, error) {
	h := sk.handle
	off := h.Offsets[i]
	if off == 0 && layout != LayoutRawTimers {
		return nil, nil
	}
	end := r.spanEnd(h, off, sk)
	if end-off > r.opts.MaxKeyGroupBytes {
		return nil, unsupportedf("key group of %d bytes is larger than the %d this reader takes", end-off, r.opts.MaxKeyGroupBytes)
	}
	compressed := sk.header != nil && sk.header.Compressed
	from, n := off, end-off
	if part != nil && !compressed {
		from, n = off+int64(part.start), int64(part.end-part.start)
	}
	var dst *[]byte
	var win *window
	if bufs != nil {
		dst = &bufs.raw
		// The next key groups are read along when all of this one is:
		// a read of one state's part of each would take the other
		// states' bytes too.
		if part == nil || compressed {
			win = &bufs.win
			win.sk = sk
		}
	}
	b, _, err := r.streamBytesInto(ctx, h.Stream, from, n, dst, win)
	if err != nil {
		return nil, err
	}
	d := &keyGroupData{b: b, base: from}
	if !compressed {
		return d, nil
	}
	d.compressed = true
	if layout == LayoutHeap {
		if len(b) < 4 {
			return nil, corruptf("heap key group of %d bytes", len(b))
		}
		plain, err := unsnappy(b[4:], r.opts.MaxKeyGroupBytes)
		if err != nil {
			return nil, err
		}
		d.b = append(append(make([]byte, 0, 4+len(plain)), b[:4]...), plain...)
		return d, nil
	}
	un := &unsnappier{}
	if bufs != nil {
		un = &bufs.un
	}
	if d.b, err = un.decode(b, r.opts.MaxKeyGroupBytes); err != nil {
		return nil, err
	}
	if part != nil {
		if part.end > len(d.b) {
			return nil, corruptf("the key group decompresses to %d bytes, fewer than when it was first read", len(d.b))
		}
		d.b, d.base = d.b[part.start:part.end], int64(part.start)
	}
	return d, nil
}
