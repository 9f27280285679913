package flinkfmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/golang/snappy"

	"github.com/stateproc/stateproc/keygroup"
)

// Part is one subtask's keyed state handle, as the reader reads it.
type Part struct {
	Subtask int
	Handle  *KeyedHandle
	Layout  Layout
}

// Parts lists the keyed state handles of the operator: its managed keyed
// state, and the raw keyed state that holds legacy timers, in ascending
// key-group order.
func (k *Keyed) Parts() []Part {
	out := make([]Part, len(k.subtasks))
	for i, sk := range k.subtasks {
		out[i] = Part{Subtask: sk.index, Handle: sk.handle, Layout: sk.layout}
	}
	return out
}

// ReadKeyGroup appends the entries of key group kg of part (an index into
// Parts) to dst, every state's, in the order the layout stores them, and
// returns them with the parts of the key group the reader could not walk.
// Their slices are valid until the next call.
func (k *Keyed) ReadKeyGroup(ctx context.Context, part, kg int, dst []Entry) ([]Entry, []Warning, error) {
	if part < 0 || part >= len(k.subtasks) {
		return dst, nil, fmt.Errorf("flinkfmt: operator %s has no keyed part %d", k.Operator.ID, part)
	}
	sk := k.subtasks[part]
	h := sk.handle
	switch {
	case sk.layout == LayoutRocksDBNative || sk.layout == LayoutChangelog:
		return dst, nil, at(sk.file, k.Operator.ID.String(), kg, -1, unsupportedf("%s layout (%s, %d bytes): not readable yet", sk.layout, h.Kind, h.Size()))
	case !h.KeyGroups.Contains(kg):
		return dst, nil, fmt.Errorf("flinkfmt: key group %d is not in part %d's key groups %v", kg, part, h.KeyGroups)
	}
	var warns []Warning
	err := k.readEntries(ctx, sk, kg-h.KeyGroups.Start, kg, -1, &dst, &warns)
	return dst, warns, err
}

// CanonicalHeader is the keyed-stream header of a canonical stream, as
// bytes: the key serializer's snapshot and every state's meta info exactly
// as the input recorded them.
type CanonicalHeader struct {
	Bytes      []byte
	Compressed bool
	// IDs maps indexes of Keyed.States to the header's state ids; -1 for a
	// state it does not hold (legacy raw timers have no meta info).
	IDs []int
}

// CanonicalHeader builds the header of a stream that holds the entries of
// the given parts (indexes into Parts). The header of a single part is
// that part's own, byte for byte; the headers of several are merged: the
// states of the first in its order, then those only the others hold. Parts
// that disagree on the key serializer or on a state's meta info cannot
// share a stream and are refused.
func (k *Keyed) CanonicalHeader(parts []int) (*CanonicalHeader, error) {
	h := &CanonicalHeader{IDs: make([]int, len(k.States))}
	for i := range h.IDs {
		h.IDs[i] = -1
	}
	var prefix []byte
	var spans [][]byte
	from := -1
	for _, p := range parts {
		if p < 0 || p >= len(k.subtasks) {
			return nil, fmt.Errorf("flinkfmt: operator %s has no keyed part %d", k.Operator.ID, p)
		}
		sk := k.subtasks[p]
		hd := sk.header
		if hd == nil || sk.layout == LayoutRawTimers {
			continue
		}
		if from < 0 {
			from, prefix, h.Compressed = sk.index, hd.raw[:hd.keyEnd], hd.Compressed
		} else if !bytes.Equal(prefix, hd.raw[:hd.keyEnd]) {
			return nil, unsupportedf("operator %s: subtasks %d and %d record different key serializers or compression; their key groups cannot share a stream", k.Operator.ID, from, sk.index)
		}
		for j, span := range hd.spans {
			b, idx := hd.raw[span[0]:span[1]], sk.ids[j]
			switch id := h.IDs[idx]; {
			case id < 0:
				h.IDs[idx] = len(spans)
				spans = append(spans, b)
			case !bytes.Equal(spans[id], b):
				return nil, unsupportedf("operator %s: subtasks record different meta infos for state %q; their key groups cannot share a stream", k.Operator.ID, k.States[idx].Name)
			}
		}
	}
	if from < 0 {
		return nil, fmt.Errorf("flinkfmt: operator %s: no keyed-stream header in parts %v", k.Operator.ID, parts)
	}
	b := binary.BigEndian.AppendUint16(append([]byte(nil), prefix...), uint16(len(spans)))
	for _, s := range spans {
		b = append(b, s...)
	}
	h.Bytes = b
	return h, nil
}

// Pair is one key/value pair of the canonical layout. Key is the composite
// key without its key-group prefix, which depends on the max parallelism.
type Pair struct {
	// State indexes Keyed.States.
	State      int
	Key, Value []byte
	// UserKey is the key serializer's bytes within Key: what Flink hashes
	// (after decoding) to find the key group.
	UserKey []byte
}

// PairEncoder turns the reader's entries back into the canonical layout's
// pairs, reusing its buffers from call to call; one goroutine uses one.
type PairEncoder struct {
	k     *Keyed
	buf   []byte
	pairs []Pair
}

// PairEncoder returns an encoder of the operator's entries.
func (k *Keyed) PairEncoder() *PairEncoder { return &PairEncoder{k: k} }

// Encode returns the canonical pairs of entries, the entries of one key
// group in the reader's order: a value, map entry or timer is a pair of
// its own, the elements of a list, which follow each other, are one pair
// joined by Flink's delimiter. The pairs and their bytes are valid until
// the next call.
func (p *PairEncoder) Encode(entries []Entry) []Pair {
	k := p.k
	// The bytes are counted first, so that the buffer never grows while
	// pairs point into it.
	size := 0
	for i := 0; i < len(entries); {
		j := k.groupEnd(entries, i)
		size += k.compositeKeyLen(&entries[i]) + valueLen(k.States[entries[i].State].Kind, entries[i:j])
		i = j
	}
	if cap(p.buf) < size {
		p.buf = make([]byte, 0, size)
	}
	buf, pairs := p.buf[:0], p.pairs[:0]
	for i := 0; i < len(entries); {
		var pr Pair
		buf, pr, i = k.appendPair(buf, entries, i)
		pairs = append(pairs, pr)
	}
	p.buf, p.pairs = buf, pairs
	return pairs
}

// Each calls f with the canonical pairs of entries one after another, as
// Encode would return them, without keeping them: each pair is valid
// during its call only.
func (p *PairEncoder) Each(entries []Entry, f func(Pair) error) error {
	for i := 0; i < len(entries); {
		var pr Pair
		p.buf, pr, i = p.k.appendPair(p.buf[:0], entries, i)
		if err := f(pr); err != nil {
			return err
		}
	}
	return nil
}

// appendPair encodes the pair that starts at entries[i] at the end of buf,
// and returns it and where the next starts. Its slices point into buf,
// until buf grows.
func (k *Keyed) appendPair(buf []byte, entries []Entry, i int) ([]byte, Pair, int) {
	e := &entries[i]
	m := k.States[e.State]
	j := k.groupEnd(entries, i)
	koff := len(buf)
	uk := koff
	if m.Kind == Timers {
		uk += 8
	}
	buf = k.appendCompositeKey(buf, m, e)
	voff := len(buf)
	switch m.Kind {
	case Timers:
	case Map:
		if e.Null {
			buf = append(buf, 1)
		} else {
			buf = append(append(buf, 0), e.Value...)
		}
	case List:
		for x := i; x < j; x++ {
			if x > i {
				buf = append(buf, listDelimiter)
			}
			buf = append(buf, entries[x].Value...)
		}
	default:
		buf = append(buf, e.Value...)
	}
	return buf, Pair{State: e.State, Key: buf[koff:voff:voff], Value: buf[voff:len(buf):len(buf)],
		UserKey: buf[uk : uk+len(e.Key) : uk+len(e.Key)]}, j
}

// groupEnd returns where the pair that starts at entries[i] ends: after
// the elements of a list with the same key and namespace, or after i.
func (k *Keyed) groupEnd(entries []Entry, i int) int {
	e := &entries[i]
	j := i + 1
	if k.States[e.State].Kind == List {
		for j < len(entries) && entries[j].State == e.State && bytes.Equal(entries[j].Key, e.Key) && bytes.Equal(entries[j].Namespace, e.Namespace) {
			j++
		}
	}
	return j
}

func (k *Keyed) compositeKeyLen(e *Entry) int {
	m := k.States[e.State]
	if m.Kind == Timers {
		return 8 + len(e.Key) + len(e.Namespace)
	}
	n := len(e.Key) + len(e.Namespace) + len(e.MapKey)
	if k.Key.FixedLen() < 0 && m.Namespace.FixedLen() < 0 {
		n += variableIntLen(len(e.Key)) + variableIntLen(len(e.Namespace))
	}
	return n
}

func valueLen(kind Kind, group []Entry) int {
	switch kind {
	case Timers:
		return 0
	case Map:
		if group[0].Null {
			return 1
		}
		return 1 + len(group[0].Value)
	}
	n := len(group) - 1
	for i := range group {
		n += len(group[i].Value)
	}
	return n
}

func variableIntLen(v int) int {
	n := 1
	for v >>= 8; v != 0; v >>= 8 {
		n++
	}
	return n
}

// appendCompositeKey appends the composite key of e without its key-group
// prefix (SerializedCompositeKeyBuilder): a timer's flipped time, key and
// namespace; otherwise key, namespace and map key, with the lengths of key
// and namespace after each when both have variable lengths.
func (k *Keyed) appendCompositeKey(b []byte, m *StateMeta, e *Entry) []byte {
	if m.Kind == Timers {
		b = binary.BigEndian.AppendUint64(b, uint64(e.Timestamp)^1<<63)
		return append(append(b, e.Key...), e.Namespace...)
	}
	ambiguous := k.Key.FixedLen() < 0 && m.Namespace.FixedLen() < 0
	b = append(b, e.Key...)
	if ambiguous {
		b = appendVariableInt(b, len(e.Key))
	}
	b = append(b, e.Namespace...)
	if ambiguous {
		b = appendVariableInt(b, len(e.Namespace))
	}
	return append(b, e.MapKey...)
}

// appendVariableInt is CompositeKeySerializationUtils.writeVariableIntBytes:
// v's bytes, least significant first, at least one.
func appendVariableInt(b []byte, v int) []byte {
	for {
		b = append(b, byte(v))
		v >>= 8
		if v == 0 {
			return b
		}
	}
}

// CanonicalWriter writes one keyed-state stream in the canonical layout
// (FullSnapshotAsyncWriter): the header, then key group by key group the
// framed pairs, each key group its own Snappy stream when the header says
// compressed. Within a key group, the pairs of one state follow each
// other; the last pair of a state has the high bit of its first key byte
// set, and is followed by the next state's id or the end-of-key-group mark.
type CanonicalWriter struct {
	out        countingWriter
	sw         *snappy.Writer
	kgOut      io.Writer
	compressed bool
	prefix     int
	kgs        keygroup.Range
	offsets    []int64
	kg, state  int
	pendKey    []byte
	pendVal    []byte
	pending    bool
	scratch    []byte
	err        error
}

type countingWriter struct {
	w   io.Writer
	pos int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.pos += int64(n)
	return n, err
}

// NewCanonicalWriter writes h to w, a new stream, and returns a writer for
// the key groups kgs of an operator with the given max parallelism.
func NewCanonicalWriter(w io.Writer, h *CanonicalHeader, maxParallelism int, kgs keygroup.Range) (*CanonicalWriter, error) {
	if kgs.Start < 0 || kgs.End >= maxParallelism {
		return nil, fmt.Errorf("flinkfmt: key groups %v outside max parallelism %d", kgs, maxParallelism)
	}
	c := &CanonicalWriter{out: countingWriter{w: w}, compressed: h.Compressed, prefix: prefixLen(maxParallelism), kgs: kgs,
		offsets: make([]int64, kgs.Len()), kg: -1}
	if _, err := c.out.Write(h.Bytes); err != nil {
		return nil, err
	}
	if c.compressed {
		c.sw = snappy.NewBufferedWriter(nil)
	}
	return c, nil
}

// Add appends a pair of state id state to key group kg. Key groups come in
// ascending order; within one, the pairs of a state follow each other, in
// any order of states (Flink's RocksDB backend writes them by id, its heap
// backend in its own order). Key is the composite key without its
// key-group prefix. Key and value are copied.
func (c *CanonicalWriter) Add(kg, state int, key, value []byte) error {
	if c.err != nil {
		return c.err
	}
	switch {
	case !c.kgs.Contains(kg):
		return c.fail(fmt.Errorf("flinkfmt: key group %d outside the stream's %v", kg, c.kgs))
	case kg < c.kg:
		return c.fail(fmt.Errorf("flinkfmt: key group %d after key group %d", kg, c.kg))
	case state < 0 || state >= endOfKeyGroup:
		return c.fail(fmt.Errorf("flinkfmt: state id %d out of range", state))
	}
	switch {
	case kg != c.kg:
		if c.pending {
			c.flush(true)
			c.endKeyGroup()
		}
		c.kg, c.state = kg, state
		c.offsets[kg-c.kgs.Start] = c.out.pos
		c.kgOut = &c.out
		if c.compressed {
			c.sw.Reset(&c.out)
			c.kgOut = c.sw
		}
		c.writeState(state)
	case state != c.state:
		c.flush(true)
		c.state = state
		c.writeState(state)
	default:
		c.flush(false)
	}
	c.pendKey = c.pendKey[:0]
	if c.prefix == 2 {
		c.pendKey = append(c.pendKey, byte(kg>>8))
	}
	c.pendKey = append(append(c.pendKey, byte(kg)), key...)
	c.pendVal = append(c.pendVal[:0], value...)
	c.pending = true
	return c.err
}

// Finish ends the last key group and returns the offset of every key group
// of the stream, 0 for those without pairs.
func (c *CanonicalWriter) Finish() ([]int64, error) {
	if c.err == nil && c.pending {
		c.flush(true)
		c.endKeyGroup()
		c.pending = false
	}
	return c.offsets, c.err
}

func (c *CanonicalWriter) fail(err error) error {
	if c.err == nil {
		c.err = err
	}
	return c.err
}

func (c *CanonicalWriter) write(p []byte) {
	if c.err != nil {
		return
	}
	if _, err := c.kgOut.Write(p); err != nil {
		c.fail(err)
	}
}

func (c *CanonicalWriter) writeState(state int) {
	c.scratch = binary.BigEndian.AppendUint16(c.scratch[:0], uint16(state))
	c.write(c.scratch)
}

// flush writes the pending pair, flagged as the last of its state.
func (c *CanonicalWriter) flush(last bool) {
	if !c.pending {
		return
	}
	b := binary.BigEndian.AppendUint32(c.scratch[:0], uint32(len(c.pendKey)))
	start := len(b)
	b = append(b, c.pendKey...)
	if last {
		b[start] |= metaFollowsFlag
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.pendVal)))
	c.scratch = append(b, c.pendVal...)
	c.write(c.scratch)
}

func (c *CanonicalWriter) endKeyGroup() {
	c.scratch = binary.BigEndian.AppendUint16(c.scratch[:0], endOfKeyGroup)
	c.write(c.scratch)
	if c.compressed && c.err == nil {
		if err := c.sw.Close(); err != nil {
			c.fail(err)
		}
	}
}
