package typeser

import (
	"encoding/binary"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// skipOp is one step of a skip program: a serializer tree flattened into
// the widths and lengths Skip reads, so that a parser that walks a key per
// entry steps over it with one loop instead of a call per tree node.
type skipOp struct {
	kind skipKind
	// n is the width of opFixed and the number of constants of opEnum.
	n int
}

type skipKind uint8

const (
	opFixed  skipKind = iota // n bytes, whatever they hold
	opString                 // a StringValue
	opBytes                  // an int32 length and that many bytes
	opEnum                   // an int32 below n
)

// compileSkip flattens c into ops, and reports false for a codec whose
// Skip does more than the ops can say (a branch on a flag, a count of
// elements, a value that may take the rest of its frame, a Kryo or Avro
// value).
func compileSkip(c codec, ops []skipOp, depth int) ([]skipOp, bool) {
	if depth > MaxDepth {
		return nil, false
	}
	fixed := func(n int) []skipOp {
		if k := len(ops); k > 0 && ops[k-1].kind == opFixed {
			ops[k-1].n += n
			return ops
		}
		return append(ops, skipOp{kind: opFixed, n: n})
	}
	switch c := c.(type) {
	case primCodec:
		n, ok := primSizes[c.kind]
		if !ok {
			return nil, false
		}
		return fixed(n), true
	case fixedCodec, windowCodec, dateCodec, instantCodec:
		// Reading these checks only that their bytes are there.
		n, _ := c.size()
		return fixed(n), true
	case stringCodec:
		return append(ops, skipOp{kind: opString}), true
	case bytesCodec:
		return append(ops, skipOp{kind: opBytes}), true
	case enumCodec:
		return append(ops, skipOp{kind: opEnum, n: len(c.symbols)}), true
	case ttlCodec:
		return compileSkip(c.elem, fixed(8), depth+1)
	case timerCodec:
		ops, ok := compileSkip(c.key, fixed(8), depth+1)
		if !ok {
			return nil, false
		}
		return compileSkip(c.ns, ops, depth+1)
	case recordCodec:
		for _, f := range c.fields {
			var ok bool
			if ops, ok = compileSkip(f, ops, depth+1); !ok {
				return nil, false
			}
		}
		if ops == nil {
			// A record without fields takes no bytes.
			ops = fixed(0)
		}
		return ops, true
	}
	return nil, false
}

// QuickSkip returns how many bytes the value at the front of b takes, and
// true, when Skip over b steps over that many without an error; false
// when it would fail, and for the serializers whose values it cannot step
// over alone (those with null flags, counts, Kryo, Avro, POJOs, rows),
// and then Skip is the way that tells. It is Skip for a parser that walks
// a key per entry of a key group.
func (s *Serializer) QuickSkip(b []byte) (int, bool) {
	if w := s.width; w >= 0 {
		return w, w <= len(b)
	}
	ops := s.prog
	i := 0
	for _, op := range ops {
		switch op.kind {
		case opFixed:
			if op.n > len(b)-i {
				return 0, false
			}
			i += op.n
		case opString:
			n, ok := wire.StringValueLen(b[i:])
			if !ok {
				return 0, false
			}
			i += n
		case opBytes:
			if len(b)-i < 4 {
				return 0, false
			}
			n := int(int32(binary.BigEndian.Uint32(b[i:])))
			if n < 0 || n > len(b)-i-4 {
				return 0, false
			}
			i += 4 + n
		case opEnum:
			if len(b)-i < 4 {
				return 0, false
			}
			if v := int32(binary.BigEndian.Uint32(b[i:])); v < 0 || int(v) >= op.n {
				return 0, false
			}
			i += 4
		}
	}
	return i, len(ops) > 0
}

// QuickWidth is the number of bytes QuickSkip steps over for every value
// when that is one fixed width whatever the bytes hold (a VoidNamespace,
// a Long, a TimeWindow), otherwise -1: a parser checks the width itself
// where a call per entry would cost more than the check.
func (s *Serializer) QuickWidth() int { return s.width }
