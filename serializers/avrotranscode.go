package serializers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/stateproc/stateproc/internal/avrobin"
	"github.com/stateproc/stateproc/internal/uvarint"
)

// transcoder runs an avroPlan over one datum. Pooled: its scratch buffers
// outlive a call.
type transcoder struct {
	avrobin.Cursor
	out []byte
	// scratch holds a map's entries or a record's fields while they are
	// put in order.
	scratch []byte
	// spans is a stack of the entries (maps) and fields (records) being put
	// in order.
	spans []span
	// zeroItems counts the array items written that take no bytes where
	// the writer's took some: the reader's bound on them.
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
	t.Reset(src)
	t.out = dst
	t.zeroItems = 0
	err := t.run(p.root, 0, 0)
	if err == nil {
		err = t.End()
	}
	out := t.out
	t.Reset(nil)
	t.out = nil
	if cap(t.scratch) <= 1<<20 && cap(t.spans) <= 1<<14 {
		t.scratch, t.spans = t.scratch[:0], t.spans[:0]
		transcoderPool.Put(t)
	}
	if ve, ok := err.(*valueError); ok && ve.sentinel == ErrUnreadable {
		// Well-formed Avro that the reader has no reading of: the message
		// names the place in the schema.
		return dst, err
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

// run transcodes one datum of n. depth is the datum's nesting in the
// writer's data, which is corrupt past the bound; out is its nesting in the
// reader's, deeper where the reader wraps a value in a union: past the
// bound the value has no reading.
func (t *transcoder) run(n *avroNode, depth, out int) error {
	if err := avrobin.CheckDepth(depth); err != nil {
		return err
	}
	if out > avrobin.MaxDepth {
		return &valueError{sentinel: ErrUnreadable, msg: fmt.Sprintf("the value would nest deeper than %d levels in the new schema", avrobin.MaxDepth)}
	}
	switch n.op {
	case opNull:
	case opBool:
		b, err := t.Bool()
		if err != nil {
			return err
		}
		if b {
			t.out = append(t.out, 1)
		} else {
			t.out = append(t.out, 0)
		}
	case opInt, opIntToLong:
		v, err := t.Int("int")
		if err != nil {
			return err
		}
		t.out = appendLong(t.out, int64(v))
	case opLong:
		v, err := t.Long("long")
		if err != nil {
			return err
		}
		t.out = appendLong(t.out, v)
	case opFloat:
		return t.copy(4, "float")
	case opDouble:
		return t.copy(8, "double")
	case opBytes:
		b, err := t.bytes(n)
		if err != nil {
			return err
		}
		if n.decimal != nil {
			if err := n.decimal.check(b); err != nil {
				return err
			}
		}
		t.out = append(appendLong(t.out, int64(len(b))), b...)
	case opFixed:
		b, err := t.Take(n.size, "fixed")
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
		i, err := t.Index(len(n.symbols), "enum index")
		if err != nil {
			return err
		}
		if n.symbols[i] < 0 {
			return &valueError{sentinel: ErrUnreadable, msg: fmt.Sprintf("enum symbol %s is not in the new schema", n.writerSymbols[i])}
		}
		t.out = appendLong(t.out, int64(n.symbols[i]))
	case opUnion:
		i, err := t.Index(len(n.branches), "union index")
		if err != nil {
			return err
		}
		b := n.branches[i]
		if b.index < 0 {
			return t.run(b.node, depth+1, out)
		}
		t.out = appendLong(t.out, int64(b.index))
		return t.run(b.node, depth+1, out+1)
	case opToUnion:
		t.out = appendLong(t.out, int64(n.index))
		return t.run(n.elem, depth, out+1)
	case opArray:
		return t.array(n, depth, out)
	case opMap:
		return t.mapEntries(n, depth, out)
	case opRecord:
		return t.record(n, depth, out)
	case opIntToFloat, opIntToDouble:
		v, err := t.Int("int")
		if err != nil {
			return err
		}
		t.appendFloat(n.op == opIntToFloat, float64(v))
	case opLongToFloat, opLongToDouble:
		v, err := t.Long("long")
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
		b, err := t.Take(4, "float")
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

// bytes reads a bytes or string datum. A string must be UTF-8; so must
// bytes that the reader reads as a string, or they have no reading.
func (t *transcoder) bytes(n *avroNode) ([]byte, error) {
	switch n.text {
	case textString:
		return t.String("string")
	case textFromBytes:
		at := t.Pos()
		b, err := t.Bytes("bytes")
		if err == nil && !utf8.Valid(b) {
			return nil, &valueError{sentinel: ErrUnreadable, msg: fmt.Sprintf("bytes at byte %d are not UTF-8, so they have no reading as a string", at)}
		}
		return b, err
	}
	return t.Bytes("bytes")
}

func (t *transcoder) copy(n int, what string) error {
	b, err := t.Take(n, what)
	if err != nil {
		return err
	}
	t.out = append(t.out, b...)
	return nil
}

// array writes the items as one block however many blocks they came in.
// The count is written up front from the first block and fixed up in the
// rare case of more blocks.
func (t *transcoder) array(n *avroNode, depth, out int) error {
	header := len(t.out)
	first, total := 0, 0
	for {
		c, size, err := t.Block(n.elem.minSize)
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
		if n.zeroOut {
			if t.zeroItems += c; t.zeroItems > avrobin.MaxZeroWidthItems {
				return &valueError{sentinel: ErrUnreadable, msg: fmt.Sprintf("the value would hold more than %d array items that take no bytes in the new schema", avrobin.MaxZeroWidthItems)}
			}
		}
		start := t.Pos()
		for range c {
			if err := t.run(n.elem, depth+1, out+1); err != nil {
				return err
			}
		}
		if err := t.EndBlock(size, start); err != nil {
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
func (t *transcoder) mapEntries(n *avroNode, depth, out int) error {
	base := len(t.out)
	mark := len(t.spans)
	for {
		// An entry takes at least the key's length byte.
		c, size, err := t.Block(1 + n.elem.minSize)
		if err != nil {
			return err
		}
		if c == 0 {
			break
		}
		start := t.Pos()
		for range c {
			e := span{start: len(t.out)}
			k, err := t.String("map key")
			if err != nil {
				return err
			}
			t.out = appendLong(t.out, int64(len(k)))
			e.key = len(t.out)
			t.out = append(t.out, k...)
			e.keyEnd = len(t.out)
			if err := t.run(n.elem, depth+1, out+1); err != nil {
				return err
			}
			e.end = len(t.out)
			t.spans = append(t.spans, e)
		}
		if err := t.EndBlock(size, start); err != nil {
			return err
		}
	}
	entries := t.spans[mark:]
	defer func() { t.spans = t.spans[:mark] }()
	if len(entries) == 0 {
		t.out = append(t.out, 0)
		return nil
	}
	written := t.out
	key := func(e span) []byte { return written[e.key:e.keyEnd] }
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

func (t *transcoder) record(n *avroNode, depth, out int) error {
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
			if err := t.run(f.node, depth+1, out+1); err != nil {
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
		if err := t.run(f.node, depth+1, out+1); err != nil {
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
	// Nothing of it is written: its nesting in the reader's data is its own.
	err := t.run(f.node, depth+1, depth+1)
	t.out = t.out[:at]
	if err != nil {
		return fieldErr(err, n, f)
	}
	return nil
}

func fieldErr(err error, n *avroNode, f fieldStep) error {
	return within(err, ErrDecode, "%s.%s", n.name, f.name)
}
