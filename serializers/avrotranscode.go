package serializers

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"sync"

	"github.com/stateproc/stateproc/internal/uvarint"
)

const (
	// maxAvroDepth bounds how deep a datum of a recursive schema may nest,
	// so hostile input cannot exhaust the stack (here or in hamba, which
	// decodes only what passed this check).
	maxAvroDepth = 1000
	// maxZeroWidthItems bounds the array items that take no bytes (nulls,
	// empty records): their count cannot be checked against the input's
	// length, and each costs hamba memory.
	maxZeroWidthItems = 1 << 16
)

// transcoder runs an avroPlan over one datum. Pooled: its scratch buffers
// outlive a call.
type transcoder struct {
	in  []byte
	pos int
	out []byte
	// scratch holds a map's entries or a record's fields while they are
	// put in order.
	scratch []byte
	// spans is a stack of the entries (maps) and fields (records) being put
	// in order.
	spans     []span
	zeroItems int
}

// span is a map entry, out[start:end] with its key out[key:keyEnd], or a
// record field, out[start:end].
type span struct{ start, key, keyEnd, end int }

var transcoderPool = sync.Pool{New: func() any { return new(transcoder) }}

// transcode appends to dst the datum in src rewritten by the plan; src must
// hold exactly one datum.
func transcode(p *avroPlan, dst, src []byte) ([]byte, error) {
	t := transcoderPool.Get().(*transcoder)
	t.in, t.pos, t.out, t.zeroItems = src, 0, dst, 0
	err := t.run(p.root, 0)
	if err == nil && t.pos != len(src) {
		err = decodeErr("%d trailing bytes after the datum", len(src)-t.pos)
	}
	out := t.out
	t.in, t.out = nil, nil
	if cap(t.scratch) <= 1<<20 && cap(t.spans) <= 1<<14 {
		t.scratch, t.spans = t.scratch[:0], t.spans[:0]
		transcoderPool.Put(t)
	}
	if err != nil {
		return dst, within(err, ErrDecode, "avro")
	}
	return out, nil
}

// validateAvro checks that src is exactly one well-formed datum of the
// plan's schema, whose counts and lengths fit in src, before hamba, which
// trusts them, decodes it.
func validateAvro(p *avroPlan, src []byte) error {
	buf := getScratch()
	out, err := transcode(p, buf.b[:0], src)
	buf.b = out
	buf.release()
	return err
}

type scratchBuf struct{ b []byte }

var scratchPool = sync.Pool{New: func() any { return new(scratchBuf) }}

func getScratch() *scratchBuf { return scratchPool.Get().(*scratchBuf) }

func (s *scratchBuf) release() {
	if cap(s.b) <= 1<<20 {
		scratchPool.Put(s)
	}
}

func (t *transcoder) truncated(what string) error {
	return decodeErr("%s truncated at byte %d", what, t.pos)
}

// varint reads the raw (zig-zag) varint of an int (maxBytes 5, last byte at
// most 0x0f) or a long (10, 0x01); longer or wider encodings overflow.
func (t *transcoder) varint(maxBytes int, lastMax byte, what string) (uint64, error) {
	var v uint64
	for i := 0; i < maxBytes; i++ {
		if t.pos >= len(t.in) {
			return 0, t.truncated(what)
		}
		b := t.in[t.pos]
		t.pos++
		if i == maxBytes-1 && b > lastMax {
			return 0, decodeErr("%s overflows at byte %d", what, t.pos-1)
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, decodeErr("%s overflows at byte %d", what, t.pos-1)
}

func (t *transcoder) long(what string) (int64, error) {
	u, err := t.varint(10, 0x01, what)
	return int64(u>>1) ^ -int64(u&1), err
}

func (t *transcoder) int(what string) (int32, error) {
	u, err := t.varint(5, 0x0f, what)
	return int32(u>>1) ^ -int32(u&1), err
}

func (t *transcoder) take(n int, what string) ([]byte, error) {
	if n > len(t.in)-t.pos {
		return nil, decodeErr("%s of %d bytes at byte %d exceeds the %d bytes that remain", what, n, t.pos, len(t.in)-t.pos)
	}
	b := t.in[t.pos : t.pos+n]
	t.pos += n
	return b, nil
}

// length reads the length of a string or bytes; what names it in errors
// ("bytes length").
func (t *transcoder) length(what string) (int, error) {
	at := t.pos
	n, err := t.long(what)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > int64(len(t.in)-t.pos) {
		return 0, decodeErr("%s %d at byte %d does not fit in the %d bytes that remain", what, n, at, len(t.in)-t.pos)
	}
	return int(n), nil
}

func (t *transcoder) run(n *avroNode, depth int) error {
	if depth > maxAvroDepth {
		return decodeErr("datum nests deeper than %d levels", maxAvroDepth)
	}
	switch n.op {
	case opNull:
	case opBool:
		b, err := t.take(1, "boolean")
		if err != nil {
			return err
		}
		if b[0] > 1 {
			return decodeErr("boolean byte %#02x at byte %d is neither 0x00 nor 0x01", b[0], t.pos-1)
		}
		t.out = append(t.out, b[0])
	case opInt, opIntToLong:
		v, err := t.int("int")
		if err != nil {
			return err
		}
		t.out = appendLong(t.out, int64(v))
	case opLong:
		v, err := t.long("long")
		if err != nil {
			return err
		}
		t.out = appendLong(t.out, v)
	case opFloat:
		return t.copy(4, "float")
	case opDouble:
		return t.copy(8, "double")
	case opBytes:
		l, err := t.length("bytes length")
		if err != nil {
			return err
		}
		b := t.in[t.pos : t.pos+l]
		t.pos += l
		if n.decimal != nil {
			if err := n.decimal.check(b); err != nil {
				return err
			}
		}
		t.out = append(appendLong(t.out, int64(l)), b...)
	case opFixed:
		b, err := t.take(n.size, "fixed")
		if err != nil {
			return err
		}
		if n.decimal != nil {
			if err := n.decimal.check(b); err != nil {
				return err
			}
		}
		t.out = append(t.out, b...)
	case opEnum:
		i, err := t.int("enum index")
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= len(n.symbols) {
			return decodeErr("enum index %d out of range [0, %d)", i, len(n.symbols))
		}
		t.out = appendLong(t.out, int64(n.symbols[i]))
	case opUnion:
		i, err := t.int("union index")
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= len(n.branches) {
			return decodeErr("union index %d out of range [0, %d)", i, len(n.branches))
		}
		b := n.branches[i]
		if b.index >= 0 {
			t.out = appendLong(t.out, int64(b.index))
		}
		return t.run(b.node, depth+1)
	case opToUnion:
		t.out = appendLong(t.out, int64(n.index))
		return t.run(n.elem, depth+1)
	case opArray:
		return t.array(n, depth)
	case opMap:
		return t.mapEntries(n, depth)
	case opRecord:
		return t.record(n, depth)
	case opIntToFloat, opIntToDouble:
		v, err := t.int("int")
		if err != nil {
			return err
		}
		t.appendFloat(n.op == opIntToFloat, float64(v))
	case opLongToFloat, opLongToDouble:
		v, err := t.long("long")
		if err != nil {
			return err
		}
		if n.op == opLongToFloat {
			// Round once, int64 to float32, as the specification's
			// promotion does; through float64 could round twice.
			t.out = binary.LittleEndian.AppendUint32(t.out, math.Float32bits(float32(v)))
		} else {
			t.appendFloat(false, float64(v))
		}
	case opUnreadable:
		return &valueError{sentinel: ErrUnreadable, msg: n.msg}
	case opFloatToDouble:
		b, err := t.take(4, "float")
		if err != nil {
			return err
		}
		t.appendFloat(false, float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
	}
	return nil
}

func (t *transcoder) appendFloat(single bool, v float64) {
	if single {
		t.out = binary.LittleEndian.AppendUint32(t.out, math.Float32bits(float32(v)))
		return
	}
	t.out = binary.LittleEndian.AppendUint64(t.out, math.Float64bits(v))
}

func (t *transcoder) copy(n int, what string) error {
	b, err := t.take(n, what)
	if err != nil {
		return err
	}
	t.out = append(t.out, b...)
	return nil
}

// block reads the header of an array or map block: the item count and, in
// the negative-count form, the block's size in bytes (-1 when absent). The
// count must fit in the bytes that remain.
func (t *transcoder) block(itemMin int) (count int, size int64, err error) {
	c, err := t.long("block count")
	if err != nil {
		return 0, 0, err
	}
	size = -1
	if c < 0 {
		if c == math.MinInt64 {
			return 0, 0, decodeErr("block count %d out of range", c)
		}
		c = -c
		if size, err = t.long("block size"); err != nil {
			return 0, 0, err
		}
		if size < 0 {
			return 0, 0, decodeErr("negative block size %d", size)
		}
	}
	remain := len(t.in) - t.pos
	if itemMin == 0 {
		if c > int64(maxZeroWidthItems-t.zeroItems) {
			return 0, 0, decodeErr("more than %d zero-width array items", maxZeroWidthItems)
		}
		t.zeroItems += int(c)
	} else if c > int64(remain/itemMin) {
		return 0, 0, decodeErr("block of %d items does not fit in the %d bytes that remain", c, remain)
	}
	return int(c), size, nil
}

func (t *transcoder) checkBlockSize(size int64, start int) error {
	if size >= 0 && size != int64(t.pos-start) {
		return decodeErr("block size %d does not match its %d bytes", size, t.pos-start)
	}
	return nil
}

// array writes the items as one block however many blocks they came in.
// The count is written up front from the first block and fixed up in the
// rare case of more blocks.
func (t *transcoder) array(n *avroNode, depth int) error {
	header := len(t.out)
	first, total := 0, 0
	for {
		c, size, err := t.block(n.elem.minSize)
		if err != nil {
			return err
		}
		if c == 0 {
			break
		}
		if total == 0 {
			first = c
			t.out = appendLong(t.out, int64(c))
		}
		start := t.pos
		for range c {
			if err := t.run(n.elem, depth+1); err != nil {
				return err
			}
		}
		if err := t.checkBlockSize(size, start); err != nil {
			return err
		}
		total += c
	}
	if total != first {
		var buf [binary.MaxVarintLen64]byte
		hdr := appendLong(buf[:0], int64(total))
		old := varintLen(int64(first))
		t.out = slices.Replace(t.out, header, header+old, hdr...)
	}
	t.out = append(t.out, 0)
	return nil
}

func varintLen(v int64) int { return uvarint.Len(uint64(v<<1) ^ uint64(v>>63)) }

// mapEntries writes the entries as one block, sorted by key bytes. Keys must
// be unique: a map with a repeated key has no single meaning.
func (t *transcoder) mapEntries(n *avroNode, depth int) error {
	base := len(t.out)
	mark := len(t.spans)
	for {
		// An entry takes at least the key's length byte.
		c, size, err := t.block(1 + n.elem.minSize)
		if err != nil {
			return err
		}
		if c == 0 {
			break
		}
		start := t.pos
		for range c {
			e := span{start: len(t.out)}
			l, err := t.length("map key length")
			if err != nil {
				return err
			}
			t.out = appendLong(t.out, int64(l))
			e.key = len(t.out)
			t.out = append(t.out, t.in[t.pos:t.pos+l]...)
			t.pos += l
			e.keyEnd = len(t.out)
			if err := t.run(n.elem, depth+1); err != nil {
				return err
			}
			e.end = len(t.out)
			t.spans = append(t.spans, e)
		}
		if err := t.checkBlockSize(size, start); err != nil {
			return err
		}
	}
	entries := t.spans[mark:]
	defer func() { t.spans = t.spans[:mark] }()
	if len(entries) == 0 {
		t.out = append(t.out, 0)
		return nil
	}
	out := t.out
	key := func(e span) []byte { return out[e.key:e.keyEnd] }
	slices.SortFunc(entries, func(a, b span) int { return bytes.Compare(key(a), key(b)) })
	for i := 1; i < len(entries); i++ {
		if bytes.Equal(key(entries[i-1]), key(entries[i])) {
			return decodeErr("map key %q appears twice", key(entries[i]))
		}
	}
	t.scratch = append(t.scratch[:0], t.out[base:]...)
	t.out = appendLong(t.out[:base], int64(len(entries)))
	for _, e := range entries {
		t.out = append(t.out, t.scratch[e.start-base:e.end-base]...)
	}
	t.out = append(t.out, 0)
	return nil
}

func (t *transcoder) record(n *avroNode, depth int) error {
	if n.inOrder {
		next := 0
		for _, f := range n.fields {
			if f.out < 0 {
				if err := t.skip(f, n, depth); err != nil {
					return err
				}
				continue
			}
			for ; next < f.out; next++ {
				t.out = append(t.out, n.readers[next].def...)
			}
			if err := t.run(f.node, depth+1); err != nil {
				return fieldErr(err, n, f)
			}
			next = f.out + 1
		}
		for ; next < len(n.readers); next++ {
			t.out = append(t.out, n.readers[next].def...)
		}
		return nil
	}
	// The writer's fields come in another order than the reader's: write
	// them as they come, then put them in order.
	base := len(t.out)
	mark := len(t.spans)
	defer func() { t.spans = t.spans[:mark] }()
	t.spans = append(t.spans, make([]span, len(n.readers))...)
	for _, f := range n.fields {
		if f.out < 0 {
			if err := t.skip(f, n, depth); err != nil {
				return err
			}
			continue
		}
		start := len(t.out)
		if err := t.run(f.node, depth+1); err != nil {
			return fieldErr(err, n, f)
		}
		t.spans[mark+f.out] = span{start: start, end: len(t.out)}
	}
	t.scratch = append(t.scratch[:0], t.out[base:]...)
	t.out = t.out[:base]
	for i, r := range n.readers {
		if !r.fromWriter {
			t.out = append(t.out, r.def...)
			continue
		}
		s := t.spans[mark+i]
		t.out = append(t.out, t.scratch[s.start-base:s.end-base]...)
	}
	return nil
}

// skip reads a writer field the reader does not have.
func (t *transcoder) skip(f fieldStep, n *avroNode, depth int) error {
	at := len(t.out)
	err := t.run(f.node, depth+1)
	t.out = t.out[:at]
	if err != nil {
		return fieldErr(err, n, f)
	}
	return nil
}

func fieldErr(err error, n *avroNode, f fieldStep) error {
	return within(err, ErrDecode, "%s.%s", n.name, f.name)
}
