package encode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// nullableNode is the nullable serializer: 00 for null, 01 and the element
// otherwise. Arrow has one null, so a null element of a nullable inside it
// is the outer null, as export writes it.
type nullableNode struct{ elem node }

func (n nullableNode) what() string { return "nullable " + n.elem.what() }

func (n nullableNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	e, err := n.elem.forArrow(dt)
	if err != nil {
		return nil, err
	}
	return &nullableEnc{elem: e}, nil
}

type nullableEnc struct {
	elem arrowEnc
	arr  arrow.Array
}

func (e *nullableEnc) bind(arr arrow.Array) { e.arr = arr; e.elem.bind(arr) }

func (e *nullableEnc) append(dst []byte, i int) ([]byte, error) {
	if isNull(e.arr, i) {
		return append(dst, 0), nil
	}
	return e.elem.append(append(dst, 1), i)
}

func (n nullableNode) appendJSON(dst []byte, v any) ([]byte, error) {
	if v == nil {
		return append(dst, 0), nil
	}
	return n.elem.appendJSON(append(dst, 1), v)
}

// listish reports whether an Arrow type is a list of some element, and
// which.
func listish(dt arrow.DataType) (arrow.DataType, bool) {
	switch t := dt.(type) {
	case *arrow.ListType:
		return t.Elem(), true
	case *arrow.LargeListType:
		return t.Elem(), true
	case *arrow.FixedSizeListType:
		return t.Elem(), true
	}
	return nil, false
}

// elements binds the encoder of a list's elements, for the list serializer
// and Avro arrays alike.
type elements struct {
	elem arrowEnc
	arr  array.ListLike
}

func (e *elements) bind(arr arrow.Array) {
	e.arr, _ = arr.(array.ListLike)
	if e.arr != nil {
		e.elem.bind(e.arr.ListValues())
	}
}

// span returns the elements of row i, or an error for a null or a batch of
// another type.
func (e *elements) span(i int, n node) (int, int, error) {
	if e.arr == nil {
		return 0, 0, errorf("a batch of another type than a list, for %s", n.what())
	}
	if isNull(e.arr, i) {
		return 0, 0, errNull(n)
	}
	start, end := e.arr.ValueOffsets(i)
	return int(start), int(end), nil
}

func elementsFor(dt arrow.DataType, n, elem node) (*elements, error) {
	et, ok := listish(dt)
	if !ok {
		return nil, errorf("a column of %s cannot hold %s values", dt, n.what())
	}
	e, err := elem.forArrow(et)
	if err != nil {
		return nil, within(err, "[]")
	}
	return &elements{elem: e}, nil
}

func index(i int) string { return "[" + strconv.Itoa(i) + "]" }

// listNode is the list serializer: a count, then each element with its
// length.
type listNode struct{ elem node }

func (n listNode) what() string { return "list" }

func (n listNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	els, err := elementsFor(dt, n, n.elem)
	if err != nil {
		return nil, err
	}
	return &listEnc{n: n, els: els}, nil
}

type listEnc struct {
	n       listNode
	els     *elements
	scratch []byte
}

func (e *listEnc) bind(arr arrow.Array) { e.els.bind(arr) }

func (e *listEnc) append(dst []byte, i int) ([]byte, error) {
	start, end, err := e.els.span(i, e.n)
	if err != nil {
		return dst, err
	}
	dst = binary.AppendUvarint(dst, uint64(end-start))
	for j := start; j < end; j++ {
		if e.scratch, err = e.els.elem.append(e.scratch[:0], j); err != nil {
			return dst, within(err, index(j-start))
		}
		dst = append(binary.AppendUvarint(dst, uint64(len(e.scratch))), e.scratch...)
	}
	return dst, nil
}

func (n listNode) appendJSON(dst []byte, v any) ([]byte, error) {
	items, ok := v.([]any)
	if !ok {
		return dst, errorf("want an array, got %s", jsonKind(v))
	}
	dst = binary.AppendUvarint(dst, uint64(len(items)))
	var scratch []byte
	for j, item := range items {
		var err error
		if scratch, err = n.elem.appendJSON(scratch[:0], item); err != nil {
			return dst, within(err, index(j))
		}
		dst = append(binary.AppendUvarint(dst, uint64(len(scratch))), scratch...)
	}
	return dst, nil
}

// entryBuf gathers the entries of one map, each key and value encoded,
// to write them sorted by key bytes.
type entryBuf struct {
	buf   []byte
	spans []entrySpan
}

type entrySpan struct{ start, keyStart, keyEnd, end int }

func (b *entryBuf) reset() {
	b.buf, b.spans = b.buf[:0], b.spans[:0]
}

func (b *entryBuf) key(s entrySpan) []byte { return b.buf[s.keyStart:s.keyEnd] }

// gather encodes the entries start to end of m, each key then its value,
// into b, keeping where each lies so that they can be sorted and framed.
func (b *entryBuf) gather(m *mapEntries, start, end int) error {
	b.reset()
	for j := start; j < end; j++ {
		s := entrySpan{start: len(b.buf), keyStart: len(b.buf)}
		var err error
		if b.buf, err = m.key.append(b.buf, j); err != nil {
			return within(err, index(j-start)+".key")
		}
		s.keyEnd = len(b.buf)
		if b.buf, err = m.value.append(b.buf, j); err != nil {
			return within(err, index(j-start)+".value")
		}
		s.end = len(b.buf)
		b.spans = append(b.spans, s)
	}
	return nil
}

// sorted sorts the entries by key and refuses a key given twice.
func (b *entryBuf) sorted() error {
	slices.SortFunc(b.spans, func(x, y entrySpan) int { return bytes.Compare(b.key(x), b.key(y)) })
	for i := 1; i < len(b.spans); i++ {
		if bytes.Equal(b.key(b.spans[i-1]), b.key(b.spans[i])) {
			return errorf("map key %q appears twice", truncate(string(b.key(b.spans[i]))))
		}
	}
	return nil
}

// mapEntries binds the encoders of a map's keys and values, for the map
// serializer and Avro maps alike.
type mapEntries struct {
	key, value arrowEnc
	arr        *array.Map
}

func (m *mapEntries) bind(arr arrow.Array) {
	m.arr, _ = arr.(*array.Map)
	if m.arr != nil {
		m.key.bind(m.arr.Keys())
		m.value.bind(m.arr.Items())
	}
}

func (m *mapEntries) span(i int, n node) (int, int, error) {
	if m.arr == nil {
		return 0, 0, errorf("a batch of another type than a map, for %s", n.what())
	}
	if isNull(m.arr, i) {
		return 0, 0, errNull(n)
	}
	start, end := m.arr.ValueOffsets(i)
	return int(start), int(end), nil
}

func mapEntriesFor(dt arrow.DataType, n, key, value node) (*mapEntries, error) {
	mt, ok := dt.(*arrow.MapType)
	if !ok {
		return nil, errorf("a column of %s cannot hold %s values", dt, n.what())
	}
	k, err := key.forArrow(mt.KeyType())
	if err != nil {
		return nil, within(err, "[].key")
	}
	v, err := value.forArrow(mt.ItemType())
	if err != nil {
		return nil, within(err, "[].value")
	}
	return &mapEntries{key: k, value: v}, nil
}

// jsonEntries reads the JSON form of a map: a list of {"key", "value"}
// objects, or, when keys are strings, an object.
func jsonEntries(v any, stringKeys bool, each func(j int, k, v any) error) error {
	switch x := v.(type) {
	case []any:
		for j, item := range x {
			e, ok := item.(map[string]any)
			k, hasKey := e["key"]
			val, hasValue := e["value"]
			if !ok || len(e) != 2 || !hasKey || !hasValue {
				return within(errorf("want a {\"key\", \"value\"} object, got %s", jsonKind(item)), index(j))
			}
			if err := each(j, k, val); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if stringKeys {
			j := 0
			for _, k := range slices.Sorted(mapKeys(x)) {
				if err := each(j, k, x[k]); err != nil {
					return err
				}
				j++
			}
			return nil
		}
	}
	return errorf("want a list of {\"key\", \"value\"} objects, got %s", jsonKind(v))
}

func mapKeys(m map[string]any) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// mapNode is the map serializer: a count, then each entry's key and value
// with their lengths, sorted by key bytes.
type mapNode struct{ key, value node }

func (n mapNode) what() string { return "map" }

func (n mapNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	m, err := mapEntriesFor(dt, n, n.key, n.value)
	if err != nil {
		return nil, err
	}
	return &mapEnc{n: n, m: m}, nil
}

type mapEnc struct {
	n mapNode
	m *mapEntries
	entryBuf
}

func (e *mapEnc) bind(arr arrow.Array) { e.m.bind(arr) }

func (e *mapEnc) append(dst []byte, i int) ([]byte, error) {
	start, end, err := e.m.span(i, e.n)
	if err != nil {
		return dst, err
	}
	if err := e.gather(e.m, start, end); err != nil {
		return dst, err
	}
	return e.frame(dst)
}

// frame writes the gathered entries as the map serializer does.
func (b *entryBuf) frame(dst []byte) ([]byte, error) {
	if err := b.sorted(); err != nil {
		return dst, err
	}
	dst = binary.AppendUvarint(dst, uint64(len(b.spans)))
	for _, s := range b.spans {
		dst = append(binary.AppendUvarint(dst, uint64(s.keyEnd-s.keyStart)), b.key(s)...)
		dst = append(binary.AppendUvarint(dst, uint64(s.end-s.keyEnd)), b.buf[s.keyEnd:s.end]...)
	}
	return dst, nil
}

func (n mapNode) appendJSON(dst []byte, v any) ([]byte, error) {
	var b entryBuf
	err := jsonEntries(v, false, func(j int, k, val any) error {
		s := entrySpan{start: len(b.buf), keyStart: len(b.buf)}
		var err error
		if b.buf, err = n.key.appendJSON(b.buf, k); err != nil {
			return within(err, index(j)+".key")
		}
		s.keyEnd = len(b.buf)
		if b.buf, err = n.value.appendJSON(b.buf, val); err != nil {
			return within(err, index(j)+".value")
		}
		s.end = len(b.buf)
		b.spans = append(b.spans, s)
		return nil
	})
	if err != nil {
		return dst, err
	}
	return b.frame(dst)
}

// structField finds the child of a struct type named name: its index, or
// -1.
func structField(st *arrow.StructType, name string) int {
	i, ok := st.FieldIdx(name)
	if !ok {
		return -1
	}
	return i
}

// fieldsEnc encodes a struct column field by field: children[k] is the
// child array of fields[k], encoded by encs[k].
type fieldsEnc struct {
	n      node
	arr    *array.Struct
	fields []int
	encs   []arrowEnc
	names  []string
}

// structOf matches the fields of a struct column to names, each compiled
// by its node; every name must have a field and every field a name.
func structOf(dt arrow.DataType, n node, names []string, nodes []node) (*fieldsEnc, error) {
	st, ok := dt.(*arrow.StructType)
	if !ok {
		return nil, errorf("a column of %s cannot hold %s values", dt, n.what())
	}
	f := &fieldsEnc{n: n, names: names}
	for k, name := range names {
		i := structField(st, name)
		if i < 0 {
			return nil, errorf("the struct has no field %s for %s", name, n.what())
		}
		e, err := nodes[k].forArrow(st.Field(i).Type)
		if err != nil {
			return nil, within(err, "."+name)
		}
		f.fields = append(f.fields, i)
		f.encs = append(f.encs, e)
	}
	for _, fld := range st.Fields() {
		if !slices.Contains(names, fld.Name) {
			return nil, errorf("the struct has a field %s that %s does not", fld.Name, n.what())
		}
	}
	return f, nil
}

func (f *fieldsEnc) bind(arr arrow.Array) {
	f.arr, _ = arr.(*array.Struct)
	if f.arr == nil {
		return
	}
	for k, i := range f.fields {
		f.encs[k].bind(f.arr.Field(i))
	}
}

// check returns an error for a null row or a batch of another type.
func (f *fieldsEnc) check(i int) error {
	if f.arr == nil {
		return errorf("a batch of another type than a struct, for %s", f.n.what())
	}
	if isNull(f.arr, i) {
		return errNull(f.n)
	}
	return nil
}

// appendAll appends every field of row i, in order.
func (f *fieldsEnc) appendAll(dst []byte, i int) ([]byte, error) {
	if err := f.check(i); err != nil {
		return dst, err
	}
	for k, e := range f.encs {
		var err error
		if dst, err = e.append(dst, i); err != nil {
			return dst, within(err, "."+f.names[k])
		}
	}
	return dst, nil
}

// jsonFields reads a JSON object with exactly the members names, and
// appends each by its node, in order.
func jsonFields(dst []byte, v any, n node, names []string, nodes []node) ([]byte, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return dst, errorf("want an object for %s, got %s", n.what(), jsonKind(v))
	}
	for k, name := range names {
		fv, ok := obj[name]
		if !ok {
			return dst, errorf("no member %s for %s", name, n.what())
		}
		var err error
		if dst, err = nodes[k].appendJSON(dst, fv); err != nil {
			return dst, within(err, "."+name)
		}
	}
	if len(obj) != len(names) {
		for name := range obj {
			if !slices.Contains(names, name) {
				return dst, errorf("a member %s that %s does not have", name, n.what())
			}
		}
	}
	return dst, nil
}

// plainStruct is a node whose values are a struct of fixed fields written
// one after another: a window, a nested TTL value, an Avro duration.
type plainStruct struct {
	name   string
	fields []string
	nodes  []node
}

func (n plainStruct) what() string { return n.name }

func (n plainStruct) forArrow(dt arrow.DataType) (arrowEnc, error) {
	f, err := structOf(dt, n, n.fields, n.nodes)
	if err != nil {
		return nil, err
	}
	return &plainStructEnc{f}, nil
}

type plainStructEnc struct{ *fieldsEnc }

func (e *plainStructEnc) append(dst []byte, i int) ([]byte, error) { return e.appendAll(dst, i) }

func (n plainStruct) appendJSON(dst []byte, v any) ([]byte, error) {
	return jsonFields(dst, v, n, n.fields, n.nodes)
}

// instantMs is an instant in epoch milliseconds, 8 bytes big-endian: the
// timestamp serializer, and the parts of a window and of a TTL value.
func instantMs(name string) *intNode {
	return &intNode{name: name, min: minInt64, max: maxInt64, unit: unitInstantMs, put: putBE64}
}

// windowNode is the window serializer: start and end.
func windowNode() node {
	return plainStruct{name: "window", fields: []string{"start", "end"}, nodes: []node{instantMs("window start"), instantMs("window end")}}
}

// ttlNode is a TTL value inside another serializer: its last-modified time
// and the value.
func ttlNode(elem node) node {
	return plainStruct{name: fmt.Sprintf("ttl %s", elem.what()), fields: []string{"last_modified", "value"}, nodes: []node{instantMs("last-modified time"), elem}}
}
