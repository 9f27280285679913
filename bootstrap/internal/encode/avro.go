package encode

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/avrobin"
)

// compileAvro compiles an Avro schema into the nodes of its binary
// encoding, with the logical types export maps (and the others as their
// underlying type, as export does). onPath holds the records being
// compiled: a record that contains itself has no dataset form.
func compileAvro(s avro.Schema, onPath map[string]bool) (node, error) {
	switch s := avrobin.Deref(s).(type) {
	case *avro.RecordSchema:
		return compileRecord(s, onPath)
	case *avro.EnumSchema:
		n := enumNode{name: s.FullName(), symbols: map[string]int{}}
		for i, sym := range s.Symbols() {
			n.symbols[sym] = i
		}
		return n, nil
	case *avro.FixedSchema:
		if l := s.Logical(); l != nil {
			switch l.Type() {
			case avro.Decimal:
				d := l.(*avro.DecimalLogicalSchema)
				return newDecimal(d.Precision(), d.Scale(), s.Size())
			case avro.Duration:
				if s.Size() == 12 {
					return durationNode(), nil
				}
			}
		}
		return fixedNode{name: s.FullName(), size: s.Size()}, nil
	case *avro.ArraySchema:
		items, err := compileAvro(s.Items(), onPath)
		if err != nil {
			return nil, within(err, "[]")
		}
		return arrayNode{items: items}, nil
	case *avro.MapSchema:
		values, err := compileAvro(s.Values(), onPath)
		if err != nil {
			return nil, within(err, "[].value")
		}
		return avroMapNode{values: values}, nil
	case *avro.UnionSchema:
		return compileUnion(s, onPath)
	case *avro.NullSchema:
		return nullNode{name: "null"}, nil
	case *avro.PrimitiveSchema:
		return compilePrimitive(s)
	}
	return nil, errorf("Avro type %s has no dataset form", s.Type())
}

func compilePrimitive(s *avro.PrimitiveSchema) (node, error) {
	var logical avro.LogicalType
	if l := s.Logical(); l != nil {
		logical = l.Type()
	}
	avroInt := func(name string, u unit) node {
		return &intNode{name: name, min: minInt32, max: maxInt32, unit: u, put: putVarint}
	}
	avroLong := func(name string, u unit) node {
		return &intNode{name: name, min: minInt64, max: maxInt64, unit: u, put: putVarint}
	}
	switch s.Type() {
	case avro.Boolean:
		return boolNode{}, nil
	case avro.Int:
		switch logical {
		case avro.Date:
			return avroInt("date", unitDate), nil
		case avro.TimeMillis:
			return avroInt("time-millis", unitTimeMs), nil
		}
		return avroInt("int", unitNone), nil
	case avro.Long:
		switch logical {
		case avro.TimeMicros:
			return avroLong("time-micros", unitTimeUs), nil
		case avro.TimestampMillis:
			return avroLong("timestamp-millis", unitInstantMs), nil
		case avro.TimestampMicros:
			return avroLong("timestamp-micros", unitInstantUs), nil
		case avro.LocalTimestampMillis:
			return avroLong("local-timestamp-millis", unitLocalMs), nil
		case avro.LocalTimestampMicros:
			return avroLong("local-timestamp-micros", unitLocalUs), nil
		}
		return avroLong("long", unitNone), nil
	case avro.Float:
		return floatNode{single: true, avro: true}, nil
	case avro.Double:
		return floatNode{avro: true}, nil
	case avro.Bytes:
		if logical == avro.Decimal {
			d := s.Logical().(*avro.DecimalLogicalSchema)
			return newDecimal(d.Precision(), d.Scale(), 0)
		}
		return bytesNode{avro: true}, nil
	case avro.String:
		return stringNode{avro: true}, nil
	}
	return nil, errorf("Avro type %s has no dataset form", s.Type())
}

// recordNode is an Avro record: its fields in order, from a struct's fields
// or an object's members of the same names.
type recordNode struct {
	name   string
	fields []string
	nodes  []node
}

func compileRecord(s *avro.RecordSchema, onPath map[string]bool) (node, error) {
	name := s.FullName()
	if onPath[name] {
		return nil, errorf("record %s contains itself, and a dataset column cannot", name)
	}
	onPath[name] = true
	defer delete(onPath, name)
	n := recordNode{name: name}
	for _, f := range s.Fields() {
		fn, err := compileAvro(f.Type(), onPath)
		if err != nil {
			return nil, within(err, "."+f.Name())
		}
		n.fields = append(n.fields, f.Name())
		n.nodes = append(n.nodes, fn)
	}
	return n, nil
}

func (n recordNode) what() string { return "record " + n.name }

func (n recordNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	f, err := structOf(dt, n, n.fields, n.nodes)
	if err != nil {
		return nil, err
	}
	return &plainStructEnc{f}, nil
}

func (n recordNode) appendJSON(dst []byte, v any) ([]byte, error) {
	return jsonFields(dst, v, n, n.fields, n.nodes)
}

// durationNode is Avro's duration: three little-endian unsigned 32-bit
// counts.
func durationNode() node {
	part := func(name string) node {
		return &intNode{name: name, min: 0, max: math.MaxUint32, put: func(dst []byte, v int64) []byte {
			return binary.LittleEndian.AppendUint32(dst, uint32(v))
		}}
	}
	return plainStruct{name: "duration", fields: []string{"months", "days", "milliseconds"},
		nodes: []node{part("months"), part("days"), part("milliseconds")}}
}

// arrayNode is an Avro array: one block with its count, then the end.
type arrayNode struct{ items node }

func (n arrayNode) what() string { return "array" }

func (n arrayNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	els, err := elementsFor(dt, n, n.items)
	if err != nil {
		return nil, err
	}
	return &arrayEnc{n: n, els: els}, nil
}

type arrayEnc struct {
	n   arrayNode
	els *elements
}

func (e *arrayEnc) bind(arr arrow.Array) { e.els.bind(arr) }

func (e *arrayEnc) append(dst []byte, i int) ([]byte, error) {
	start, end, err := e.els.span(i, e.n)
	if err != nil {
		return dst, err
	}
	if end > start {
		dst = putVarint(dst, int64(end-start))
	}
	for j := start; j < end; j++ {
		if dst, err = e.els.elem.append(dst, j); err != nil {
			return dst, within(err, index(j-start))
		}
	}
	return append(dst, 0), nil
}

func (n arrayNode) appendJSON(dst []byte, v any) ([]byte, error) {
	items, ok := v.([]any)
	if !ok {
		return dst, errorf("want an array, got %s", jsonKind(v))
	}
	if len(items) > 0 {
		dst = putVarint(dst, int64(len(items)))
	}
	for j, item := range items {
		var err error
		if dst, err = n.items.appendJSON(dst, item); err != nil {
			return dst, within(err, index(j))
		}
	}
	return append(dst, 0), nil
}

// avroMapNode is an Avro map: one block of entries sorted by the bytes of
// their keys, then the end.
type avroMapNode struct{ values node }

func (n avroMapNode) what() string { return "map" }

// mapKey is an Avro map's key: a string, whose bytes the entries are
// sorted by (without the length in front).
var mapKey = stringNode{}

func (n avroMapNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	m, err := mapEntriesFor(dt, n, mapKey, n.values)
	if err != nil {
		return nil, err
	}
	return &avroMapEnc{n: n, m: m}, nil
}

type avroMapEnc struct {
	n avroMapNode
	m *mapEntries
	entryBuf
}

func (e *avroMapEnc) bind(arr arrow.Array) { e.m.bind(arr) }

func (e *avroMapEnc) append(dst []byte, i int) ([]byte, error) {
	start, end, err := e.m.span(i, e.n)
	if err != nil {
		return dst, err
	}
	if err := e.gather(e.m, start, end); err != nil {
		return dst, err
	}
	return e.avroFrame(dst)
}

// avroFrame writes the gathered entries as an Avro map: each key with its
// length, then its value.
func (b *entryBuf) avroFrame(dst []byte) ([]byte, error) {
	if err := b.sorted(); err != nil {
		return dst, err
	}
	if len(b.spans) > 0 {
		dst = putVarint(dst, int64(len(b.spans)))
	}
	for _, s := range b.spans {
		dst = append(putVarint(dst, int64(s.keyEnd-s.keyStart)), b.buf[s.keyStart:s.end]...)
	}
	return append(dst, 0), nil
}

func (n avroMapNode) appendJSON(dst []byte, v any) ([]byte, error) {
	var b entryBuf
	err := jsonEntries(v, true, func(j int, k, val any) error {
		s := entrySpan{start: len(b.buf), keyStart: len(b.buf)}
		var err error
		if b.buf, err = mapKey.appendJSON(b.buf, k); err != nil {
			return within(err, index(j)+".key")
		}
		s.keyEnd = len(b.buf)
		if b.buf, err = n.values.appendJSON(b.buf, val); err != nil {
			return within(err, index(j)+".value")
		}
		s.end = len(b.buf)
		b.spans = append(b.spans, s)
		return nil
	})
	if err != nil {
		return dst, err
	}
	return b.avroFrame(dst)
}

// compileUnion compiles a union as export maps it: with null and one other
// branch (or that branch alone), a nullable column of that branch; of nulls
// only, a column of nulls; otherwise a struct of one field per branch.
func compileUnion(s *avro.UnionSchema, onPath map[string]bool) (node, error) {
	types := s.Types()
	nullIdx := -1
	var values []int
	for i, t := range types {
		if t.Type() == avro.Null {
			nullIdx = i
		} else {
			values = append(values, i)
		}
	}
	switch len(values) {
	case 0:
		if nullIdx < 0 {
			return nil, errorf("the empty union holds no value, and has no dataset form")
		}
		return optionalNode{null: nullIdx, value: -1}, nil
	case 1:
		inner, err := compileAvro(types[values[0]], onPath)
		if err != nil {
			return nil, err
		}
		return optionalNode{null: nullIdx, value: values[0], elem: inner}, nil
	}
	names := export.UnionBranchNames(types)
	u := unionNode{null: nullIdx}
	for _, i := range values {
		bn, err := compileAvro(types[i], onPath)
		if err != nil {
			return nil, within(err, "."+names[i])
		}
		u.names = append(u.names, names[i])
		u.index = append(u.index, i)
		u.nodes = append(u.nodes, bn)
	}
	return u, nil
}

// optionalNode is a union of null and one other branch, or of one branch,
// or of nulls only (value -1): the branch's values, or null.
type optionalNode struct {
	null, value int
	elem        node
}

func (n optionalNode) what() string {
	if n.elem == nil {
		return "union of nulls"
	}
	return "union [null, " + n.elem.what() + "]"
}

func (n optionalNode) putNull(dst []byte) ([]byte, error) {
	if n.null < 0 {
		return dst, errorf("null, and the union has no null branch")
	}
	return putVarint(dst, int64(n.null)), nil
}

func (n optionalNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	e := &optionalEnc{n: n}
	if n.elem != nil {
		var err error
		if e.elem, err = n.elem.forArrow(dt); err != nil {
			return nil, err
		}
	}
	return e, nil
}

type optionalEnc struct {
	n    optionalNode
	elem arrowEnc
	arr  arrow.Array
}

func (e *optionalEnc) bind(arr arrow.Array) {
	e.arr = arr
	if e.elem != nil {
		e.elem.bind(arr)
	}
}

func (e *optionalEnc) append(dst []byte, i int) ([]byte, error) {
	if isNull(e.arr, i) {
		return e.n.putNull(dst)
	}
	if e.elem == nil {
		return dst, errorf("a value, and the union holds only null")
	}
	return e.elem.append(putVarint(dst, int64(e.n.value)), i)
}

func (n optionalNode) appendJSON(dst []byte, v any) ([]byte, error) {
	if v == nil {
		return n.putNull(dst)
	}
	if n.elem == nil {
		return dst, errorf("want null, got %s", jsonKind(v))
	}
	return n.elem.appendJSON(putVarint(dst, int64(n.value)), v)
}

// unionNode is any other union: at most one branch set, by name; none
// means null.
type unionNode struct {
	null  int
	names []string
	index []int
	nodes []node
}

func (n unionNode) what() string { return "union" }

func (n unionNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	st, ok := dt.(*arrow.StructType)
	if !ok {
		return nil, errorf("a column of %s cannot hold a union, which is a struct of its branches", dt)
	}
	// A dataset may leave out the fields of branches it never uses.
	e := &unionEnc{n: n}
	for k, name := range n.names {
		i := structField(st, name)
		if i < 0 {
			continue
		}
		be, err := n.nodes[k].forArrow(st.Field(i).Type)
		if err != nil {
			return nil, within(err, "."+name)
		}
		e.branches = append(e.branches, unionBranch{branch: k, field: i, enc: be})
	}
	for _, f := range st.Fields() {
		if !slices.Contains(n.names, f.Name) {
			return nil, errorf("the struct has a field %s that is no branch of the union", f.Name)
		}
	}
	return e, nil
}

type unionBranch struct {
	branch, field int
	enc           arrowEnc
	arr           arrow.Array
}

type unionEnc struct {
	n        unionNode
	arr      arrow.Array
	branches []unionBranch
}

func (e *unionEnc) bind(arr arrow.Array) {
	e.arr = arr
	s, ok := arr.(interface{ Field(int) arrow.Array })
	for k := range e.branches {
		b := &e.branches[k]
		b.arr = nil
		if ok {
			b.arr = s.Field(b.field)
			b.enc.bind(b.arr)
		}
	}
}

func (e *unionEnc) append(dst []byte, i int) ([]byte, error) {
	if isNull(e.arr, i) {
		return unionNull(dst, e.n)
	}
	set := -1
	for k := range e.branches {
		b := &e.branches[k]
		if b.arr == nil {
			return dst, errType(e.arr, e.n)
		}
		if isNull(b.arr, i) {
			continue
		}
		if set >= 0 {
			return dst, errorf("branches %s and %s are both set", e.n.names[e.branches[set].branch], e.n.names[b.branch])
		}
		set = k
	}
	if set < 0 {
		return unionNull(dst, e.n)
	}
	b := &e.branches[set]
	out, err := b.enc.append(putVarint(dst, int64(e.n.index[b.branch])), i)
	return out, within(err, "."+e.n.names[b.branch])
}

func unionNull(dst []byte, n unionNode) ([]byte, error) {
	if n.null < 0 {
		return dst, errorf("no branch of the union is set, and it has no null branch")
	}
	return putVarint(dst, int64(n.null)), nil
}

func (n unionNode) appendJSON(dst []byte, v any) ([]byte, error) {
	if v == nil {
		return unionNull(dst, n)
	}
	obj, ok := v.(map[string]any)
	if !ok || len(obj) != 1 {
		return dst, errorf("want null or an object of one member, the branch, got %s", jsonKind(v))
	}
	for name, bv := range obj {
		k := slices.Index(n.names, name)
		if k < 0 {
			return dst, errorf("%s is no branch of the union", name)
		}
		out, err := n.nodes[k].appendJSON(putVarint(dst, int64(n.index[k])), bv)
		return out, within(err, "."+name)
	}
	return dst, nil
}
