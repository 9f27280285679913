package flinkfmt

import (
	"bytes"
	"encoding/binary"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
)

// Figures are what counting an entry takes of it: its key, its size and
// its value's size, without the entry.
type Figures struct {
	// Key is the entry's key; it is valid until the next call of Next or
	// NextFigures.
	Key []byte
	// Bytes is the length of the key, namespace, map key and value as
	// Entry gives them, and of a map value's null flag.
	Bytes int
	// Value is the length of the value as the state stores it, as
	// NextValueSizes gives it.
	Value int
	// SameKey says Key is the key of the entry before, the one Next or
	// NextFigures gave last; false does not say it differs.
	SameKey bool
}

// NextFigures stores in dst the figures of the entries that follow the one
// Next gave last, in its state and key group, and returns how many: 0 when
// the next entry is for Next to read. That is so at the end of the state in
// the key group, for list and timer states, for the layouts other than the
// canonical one, and for an entry whose reading would fail or take more
// than the composite key's frame and the serializers' QuickSkip (a Kryo
// key, a namespace with a null flag): Next then reads it, and reports what
// is wrong with it. A key group's entries are checked as Next checks them,
// whichever of the two reads them. After NextFigures, Entry is not valid
// until Next.
//
// It is for a tool that counts every entry (keys, entries, bytes, value
// sizes) and needs nothing else of most of them.
func (it *EntryIterator) NextFigures(dst []Figures) int {
	c := &it.cursor
	if it.err != nil || it.closed || !c.active || it.keep != nil || c.inList || c.done || c.needID || c.single {
		return 0
	}
	if it.state >= 0 && it.state != c.idx {
		return 0
	}
	if it.quick == nil {
		it.quick = make([]quickState, len(it.k.States))
	}
	q := &it.quick[c.idx]
	if !q.built {
		*q = newQuickState(it.k, c.m)
	}
	if !q.ok {
		return 0
	}
	return c.figures(q, dst)
}

// quickState is what NextFigures needs of a state, worked out once per
// iterator.
type quickState struct {
	built, ok bool
	isMap     bool
	// ambiguous is splitKey's: both key and namespace have variable
	// lengths, and so each is followed by its length.
	ambiguous bool
	ns        *typeser.Serializer
	nsWidth   int
}

func newQuickState(k *Keyed, m *StateMeta) quickState {
	q := quickState{built: true, ok: m.Kind != List && m.Kind != Timers && m.Namespace != nil && k.Key != nil, isMap: m.Kind == Map, ns: m.Namespace}
	if q.ok {
		q.ambiguous = k.Key.FixedLen() < 0 && m.Namespace.FixedLen() < 0
		q.nsWidth = m.Namespace.QuickWidth()
	}
	return q
}

// figures is NextFigures on the cursor's current state. An entry it does
// not take leaves the cursor and the parser as they were before it, so
// that next reads it as if figures had not been called.
func (c *canonCursor) figures(q *quickState, dst []Figures) int {
	p, r := c.p, c.r
	b, pos := r.Bytes(), r.Pos()
	keySer := p.k.Key
	prefixFree := keySer.PrefixFree()
	n := 0
	for n < len(dst) {
		// The frames, as wire.Buf.Sized reads them; an empty composite key
		// is an error for next to report.
		if len(b)-pos < 8 {
			break
		}
		kl := int(int32(binary.BigEndian.Uint32(b[pos:])))
		ks := pos + 4
		if kl <= 0 || kl > len(b)-ks-4 {
			break
		}
		key := b[ks : ks+kl]
		vp := ks + kl
		vl := int(int32(binary.BigEndian.Uint32(b[vp:])))
		vs := vp + 4
		if vl < 0 || vl > len(b)-vs {
			break
		}
		// The last entry of the state in the key group carries the flag and
		// ends the state for next.
		if key[0]&metaFollowsFlag != 0 || len(key) < p.prefix {
			break
		}
		g := int(key[0])
		if p.prefix == 2 {
			g = g<<8 | int(key[1])
		}
		if g != p.kg {
			break
		}
		rest := key[p.prefix:]
		// lastKey is the key of the entry before whenever it is set: the
		// entries before this one in its state and key group were split by
		// figures or by splitKey, which both keep it.
		kn := len(p.lastKey)
		reused := kn > 0 && bytes.HasPrefix(rest, p.lastKey)
		if !reused {
			var ok bool
			if kn, ok = keySer.QuickSkip(rest); !ok {
				break
			}
		}
		i := kn
		if q.ambiguous {
			if i += variableIntLen(kn); i > len(rest) {
				break
			}
		}
		nn := q.nsWidth
		if nn < 0 {
			var ok bool
			if nn, ok = q.ns.QuickSkip(rest[i:]); !ok {
				break
			}
		} else if nn > len(rest)-i {
			break
		}
		i += nn
		if q.ambiguous {
			if i += variableIntLen(nn); i > len(rest) {
				break
			}
		}
		user := len(rest) - i
		// A map value's size is its null flag and, unless null, the value.
		size := vl
		switch {
		case !q.isMap:
			// Only a map state's keys hold more than key and namespace.
			if user != 0 {
				size = -1
			}
		case vl == 0:
			// A map value without its null flag.
			size = -1
		case b[vs] != 0:
			size = 1
		}
		if size < 0 {
			break
		}
		if !reused && prefixFree {
			p.lastKey = append(p.lastKey[:0], rest[:kn]...)
		}
		// Field by field: a Figures built aside and copied costs a stall on
		// every entry.
		d := &dst[n]
		d.Key, d.Bytes, d.Value, d.SameKey = rest[:kn], kn+nn+user+size, size, reused
		n++
		pos = vs + vl
	}
	r.Seek(pos)
	return n
}
