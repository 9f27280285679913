package flinkfmt

import (
	"context"
	"fmt"
	"strings"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
)

// CanonicalKeyGroup calls f with every pair of key group kg of part (an
// index into Parts, in the canonical layout) as it is stored: the state
// (an index into States), the composite key without its key-group prefix,
// and the value. Nothing is decoded beyond the framing and the prefix,
// which must name kg: a rewrite that moves pairs as they are needs no
// more, and reading costs no allocation per pair. The slices are valid
// during the call only.
func (k *Keyed) CanonicalKeyGroup(ctx context.Context, part, kg int, f func(state int, key, value []byte) error) error {
	if part < 0 || part >= len(k.subtasks) || k.subtasks[part].layout != LayoutCanonical {
		return fmt.Errorf("flinkfmt: operator %s has no canonical keyed part %d", k.Operator.ID, part)
	}
	sk := k.subtasks[part]
	h := sk.handle
	if !h.KeyGroups.Contains(kg) {
		return fmt.Errorf("flinkfmt: key group %d is not in part %d's key groups %v", kg, part, h.KeyGroups)
	}
	i := kg - h.KeyGroups.Start
	d, err := k.r.readKeyGroup(ctx, sk, i, kg, LayoutCanonical, nil, nil)
	if err != nil || d == nil {
		return at(sk.file, k.Operator.ID.String(), kg, h.Offsets[i], err)
	}
	var base int64
	if !d.compressed {
		base = d.base
	}
	p := &kgParser{k: k, sk: sk, kg: kg, prefix: prefixLen(k.Operator.MaxParallelism)}
	r := wire.New(d.b, base)
	if err := p.rawPairs(r, f); err != nil {
		off := r.Offset()
		if d.compressed {
			err, off = fmt.Errorf("in the decompressed key group: %w", err), h.Offsets[i]
		}
		return at(sk.file, k.Operator.ID.String(), kg, off, err)
	}
	return nil
}

func (p *kgParser) rawPairs(r *wire.Buf, f func(state int, key, value []byte) error) error {
	sid := int(r.U16())
	for r.Err() == nil {
		_, idx, err := p.meta(sid)
		if err != nil {
			return err
		}
		key := r.Sized("key")
		val := r.Sized("value")
		if err := r.Err(); err != nil {
			return corrupt(err)
		}
		if len(key) < p.prefix {
			return corruptf("composite key of %d bytes has no key-group prefix", len(key))
		}
		g := int(key[0] &^ metaFollowsFlag)
		if p.prefix == 2 {
			g = g<<8 | int(key[1])
		}
		if g != p.kg {
			return corruptf("composite key of key group %d in key group %d", g, p.kg)
		}
		if err := f(idx, key[p.prefix:], val); err != nil {
			return err
		}
		if key[0]&metaFollowsFlag == 0 {
			continue
		}
		next := r.U16()
		if r.Err() != nil {
			return corrupt(r.Err())
		}
		if next == endOfKeyGroup {
			if r.Len() != 0 {
				return corruptf("%d bytes follow the end of the key group", r.Len())
			}
			return nil
		}
		sid = int(next)
	}
	return corrupt(r.Err())
}

// UserKey returns the key serializer's bytes at the start of a composite
// key (after a timer's time) of state, an index into States: what Flink
// hashes, after decoding, to find the key group.
func (k *Keyed) UserKey(state int, composite []byte) ([]byte, error) {
	b := composite
	if k.States[state].Kind == Timers {
		if len(b) < 8 {
			return nil, corruptf("timer key of %d bytes", len(b))
		}
		b = b[8:]
	}
	n, err := serializedLen(k.Key, b, 0)
	if err != nil {
		return nil, corrupt(fmt.Errorf("the key of a composite key: %w", err))
	}
	return b[:n], nil
}

const stringSerializerPrefix = "org.apache.flink.api.common.typeutils.base.StringSerializer"

// serializedLen returns the length of the value of s at the start of b, without
// decoding it where its form is known: fixed lengths, Flink's strings
// (their UTF-16 units as varints), tuples of them.
func serializedLen(s *typeser.Serializer, b []byte, depth int) (int, error) {
	if n := s.FixedLen(); n >= 0 {
		if n > len(b) {
			return 0, fmt.Errorf("a %s of %d bytes in %d", s.Type, n, len(b))
		}
		return n, nil
	}
	switch {
	case depth > typeser.MaxDepth:
		return 0, fmt.Errorf("values nest deeper than %d", typeser.MaxDepth)
	case s.Type.Kind == typeser.KindString && strings.HasPrefix(s.Class, stringSerializerPrefix):
		units, i, ok := uvarint7(b, 0)
		if !ok || units == 0 {
			return 0, fmt.Errorf("a string with a bad length")
		}
		for range units - 1 {
			if _, i, ok = uvarint7(b, i); !ok {
				return 0, fmt.Errorf("a string cut short")
			}
		}
		return i, nil
	case s.Type.Kind == typeser.KindRecord && strings.HasPrefix(s.Class, "org.apache.flink.api.java.typeutils.runtime.TupleSerializer"):
		n := 0
		for _, f := range s.Args {
			m, err := serializedLen(f, b[n:], depth+1)
			if err != nil {
				return 0, err
			}
			n += m
		}
		return n, nil
	}
	r := wire.New(b, 0)
	if _, err := s.Read(r); err != nil {
		return 0, err
	}
	return r.Pos(), nil
}

// uvarint7 reads one of StringValue's 7-bit groups, low first, at b[i:].
func uvarint7(b []byte, i int) (uint32, int, bool) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		if i >= len(b) {
			return 0, i, false
		}
		c := b[i]
		i++
		v |= uint32(c&0x7F) << shift
		if c < 0x80 {
			return v, i, true
		}
	}
	return 0, i, false
}
