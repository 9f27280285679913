package typeser

import (
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// RowSerializer (org.apache.flink.types.Row) writes a bit mask, most
// significant bit first and padded to whole bytes, then the fields that
// are not null. From its outer snapshot version 3 on the snapshot records
// whether the serializer ran in legacy mode; outside legacy mode the mask
// starts with two bits of the RowKind. Older snapshots are legacy.
const rowLegacyOuterVersion = 2

func restoreRow(p *parser, class string, version int) (*Type, codec) {
	legacy := true
	n := p.composite(class, version, func(outerVersion int) {
		if outerVersion > rowLegacyOuterVersion {
			legacy = p.r.Bool()
		}
	})
	if p.failed() {
		return nil, nil
	}
	t := &Type{Kind: KindRecord, Class: "org.apache.flink.types.Row"}
	c := rowCodec{legacy: legacy}
	for i, s := range n {
		name := fmt.Sprintf("f%d", i)
		t.Fields = append(t.Fields, Field{Name: name, Type: s.Type, Nullable: true})
		c.names = append(c.names, name)
		c.fields = append(c.fields, s.c)
	}
	return t, c
}

type rowCodec struct {
	legacy bool
	names  []string
	fields []codec
}

func (c rowCodec) read(r *wire.Buf, last bool) any {
	offset := 2
	if c.legacy {
		offset = 0
	}
	bits := offset + len(c.fields)
	mask := r.Raw((bits+7)/8, "row null mask")
	if r.Err() != nil {
		return nil
	}
	bit := func(i int) bool { return mask[i/8]&(0x80>>(i%8)) != 0 }
	out := RecordValue{Class: "org.apache.flink.types.Row"}
	if !c.legacy {
		kind := 0
		if bit(0) {
			kind |= 1
		}
		if bit(1) {
			kind |= 2
		}
		out.Kind = rowKinds[kind]
	}
	lastPresent := -1
	for i := range c.fields {
		if !bit(offset + i) {
			lastPresent = i
		}
	}
	for i, f := range c.fields {
		var v any
		if !bit(offset + i) {
			v = f.read(r, last && i == lastPresent)
		}
		if r.Err() != nil {
			return nil
		}
		out.Fields = append(out.Fields, FieldValue{Name: c.names[i], Value: v})
	}
	return out
}

func (c rowCodec) size() (int, bool) { return 1, false }
