package typeser

import (
	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// PojoSerializer's flags byte.
const (
	pojoNull            = 0x01
	pojoNoSubclass      = 0x02
	pojoSubclass        = 0x04
	pojoTaggedSubclass  = 0x08
	pojoKnownFlagsMask  = pojoNull | pojoNoSubclass | pojoSubclass | pojoTaggedSubclass
	pojoFieldIsNullTrue = true
)

// restorePojo reads PojoSerializerSnapshot: the POJO class, then optional
// maps of the fields (name → field, snapshot), the registered subclasses
// (class → snapshot, their position is the tag) and the other subclasses
// seen so far (class → snapshot).
func restorePojo(p *parser, class string, version int) (*Type, codec) {
	if version != 2 {
		p.unsupported(class, version, "POJO snapshots have version 2")
		return nil, nil
	}
	name := p.r.UTF("POJO class")
	fields := p.optionalMap("POJO fields")
	registered := p.optionalMap("POJO registered subclasses")
	others := p.optionalMap("POJO subclasses")
	if p.failed() {
		return nil, nil
	}
	t := &Type{Kind: KindRecord, Class: name}
	c := &pojoCodec{class: name, others: map[string]codec{}}
	for _, f := range fields {
		if !f.hasValue {
			p.unsupported(class, version, "field %s.%s has no serializer snapshot", name, f.name)
			return nil, nil
		}
		s := p.nestedIn(f.value, 0)
		if p.failed() {
			return nil, nil
		}
		t.Fields = append(t.Fields, Field{Name: f.name, Type: s.Type, Nullable: true})
		c.names = append(c.names, f.name)
		c.fields = append(c.fields, s.c)
	}
	for _, e := range registered {
		var sc codec = missingSubclass{class: e.name}
		if e.hasValue {
			if s := p.nestedIn(e.value, 0); s != nil {
				sc = s.c
			}
		}
		c.tagged = append(c.tagged, sc)
		c.taggedNames = append(c.taggedNames, e.name)
	}
	for _, e := range others {
		if e.hasValue {
			if s := p.nestedIn(e.value, 0); s != nil {
				c.others[e.name] = s.c
			}
		}
	}
	if p.failed() {
		return nil, nil
	}
	return t, c
}

type pojoCodec struct {
	class       string
	names       []string
	fields      []codec
	tagged      []codec
	taggedNames []string
	others      map[string]codec
}

func (c *pojoCodec) read(r *wire.Buf, last bool) any {
	flags := r.U8()
	if r.Err() != nil {
		return nil
	}
	if flags&^pojoKnownFlagsMask != 0 {
		r.Failf(wire.ErrMalformed, "POJO %s: unknown flags %#02x", c.class, flags)
		return nil
	}
	switch {
	case flags&pojoNull != 0:
		return nil
	case flags&pojoSubclass != 0:
		sub := r.UTF("POJO subclass")
		sc, ok := c.others[sub]
		if !ok {
			sc = missingSubclass{class: sub}
		}
		return sc.read(r, last)
	case flags&pojoTaggedSubclass != 0:
		tag := int(r.U8())
		if r.Err() != nil {
			return nil
		}
		if tag >= len(c.tagged) {
			r.Failf(wire.ErrMalformed, "POJO %s: subclass tag %d, %d registered", c.class, tag, len(c.tagged))
			return nil
		}
		return c.tagged[tag].read(r, last)
	case flags&pojoNoSubclass != 0:
		out := RecordValue{Class: c.class, Fields: make([]FieldValue, 0, len(c.fields))}
		for i, f := range c.fields {
			var v any
			if r.Bool() != pojoFieldIsNullTrue {
				v = f.read(r, last && i == len(c.fields)-1)
			}
			if r.Err() != nil {
				return nil
			}
			out.Fields = append(out.Fields, FieldValue{Name: c.names[i], Value: v})
		}
		return out
	}
	r.Failf(wire.ErrMalformed, "POJO %s: flags %#02x name no case", c.class, flags)
	return nil
}

func (c *pojoCodec) size() (int, bool) { return 1, false }

// missingSubclass is a subclass the snapshot has no serializer for: its
// bytes cannot be walked.
type missingSubclass struct{ class string }

func (m missingSubclass) read(r *wire.Buf, last bool) any {
	return opaqueCodec{class: m.class, serializer: "PojoSerializer subclass without a snapshot"}.read(r, last)
}

func (missingSubclass) size() (int, bool) { return 0, false }
