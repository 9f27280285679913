package export

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// A flat dataset is a keyed state or timer service whose every column is
// one value of a primitive Parquet type, decoded from the serializers' own
// byte forms: the common case (string keys, counters, timestamps), and
// Apache Flink's strings and primitives, which may be null, and its TTL
// values of them, a struct of two. Its Parquet files are written straight
// from slices of decoded values (and definition levels, where a value may
// be null) by the column writers underneath Arrow's, without building
// Arrow arrays first, which cost about as much as the decoding. The files
// are the same bytes either way.

// A flatDec is how the bytes of one column's values decode, and which slice
// of a flatCol holds them.
type flatDec uint8

const (
	notFlat flatDec = iota
	flatBool
	flatInt32
	flatInt64
	flatFloat32
	flatFloat64
	flatString
	flatBytes
	flatTimestamp
	// Flink's values, read by typeser's cursor: a string may be null.
	flatFlinkBool
	flatFlinkInt32
	flatFlinkInt64
	flatFlinkFloat32
	flatFlinkFloat64
	flatFlinkString
	// flatFlinkTTL is a TTL value of a Flink primitive or string, a
	// struct of two leaves: the last access time, in the column of the
	// field, and the element, in the column after it.
	flatFlinkTTL
)

// flatDecOf is the flat decoding of a serializer's values, or notFlat.
func flatDecOf(s serializers.Snapshot) flatDec {
	switch s.Kind {
	case serializers.KindBool:
		return flatBool
	case serializers.KindInt32:
		return flatInt32
	case serializers.KindInt64:
		return flatInt64
	case serializers.KindFloat32:
		return flatFloat32
	case serializers.KindFloat64:
		return flatFloat64
	case serializers.KindString:
		return flatString
	case serializers.KindBytes:
		return flatBytes
	case serializers.KindTimestamp:
		return flatTimestamp
	}
	return notFlat
}

// flinkFlatOf is the flat decoding of the values of a Flink serializer,
// or notFlat: a primitive or a string, or a TTL value of one (elem is
// then the element's decoding); nullFlag says that each value starts
// with a map value's null flag.
func flinkFlatOf(fs flinkSerializer) (dec, elem flatDec, nullFlag bool) {
	sp, ok := fs.(flinkShaper)
	if !ok {
		return notFlat, notFlat, false
	}
	sh, nullFlag := sp.FlinkShape()
	t := fs.FlinkType()
	if sh == nil {
		return notFlat, notFlat, false
	}
	if nullFlag {
		if t.Kind != typeser.KindNullable {
			return notFlat, notFlat, false
		}
		t = t.Elem
	}
	if sh.Kind == typeser.ShapeTTL && t.Kind == typeser.KindTTL {
		if elem = flinkPrimitive(sh.Elems[0], t.Elem); elem == notFlat {
			return notFlat, notFlat, false
		}
		return flatFlinkTTL, elem, nullFlag
	}
	return flinkPrimitive(sh, t), notFlat, nullFlag
}

func flinkPrimitive(sh *typeser.Shape, t *typeser.Type) flatDec {
	switch {
	case sh.Kind == typeser.ShapeBool && t.Kind == typeser.KindBool:
		return flatFlinkBool
	case sh.Kind == typeser.ShapeInt32 && t.Kind == typeser.KindInt32:
		return flatFlinkInt32
	case sh.Kind == typeser.ShapeInt64 && t.Kind == typeser.KindInt64:
		return flatFlinkInt64
	case sh.Kind == typeser.ShapeFloat32 && t.Kind == typeser.KindFloat32:
		return flatFlinkFloat32
	case sh.Kind == typeser.ShapeFloat64 && t.Kind == typeser.KindFloat64:
		return flatFlinkFloat64
	case sh.Kind == typeser.ShapeString && t.Kind == typeser.KindString:
		return flatFlinkString
	}
	return notFlat
}

// flatCol holds one column's values of a row group, in the slice its
// decoding fills: strings and bytes back to back in data, value i at
// data[offs[i]:offs[i+1]], as Parquet's column writer takes them.
type flatCol struct {
	dec flatDec
	// maxDef is the definition level of a value of the column, 0 when
	// none may be null; defs then holds each row's, and nulls counts the
	// rows without a value.
	maxDef int16
	defs   []int16
	nulls  int
	// nullFlag says that the values start with a map value's null flag;
	// elem is the element's column of a Flink TTL value, and cur reads
	// Flink's values.
	nullFlag bool
	elem     *flatCol
	cur      typeser.Cursor
	bools    []bool
	i32      []int32
	i64      []int64
	f32      []float32
	f64      []float64
	data     []byte
	offs     []int32
	// dict is set for a column stored with a dictionary: data holds the
	// dictionary's values, and idx the value of each row. A key column's
	// dictionary is its runs of equal keys, each once; unsorted says that
	// the runs of a key group were not in order, so they may repeat a
	// key, which a dictionary must not. A map_key column's is its
	// distinct values, in the order they came, which ids maps to their
	// index.
	dict     bool
	idx      []int32
	unsorted bool
	// ids is set for a map_key column whose file has a dictionary, or
	// whose first row group is being written: its rows are looked up as
	// they come, and dict says that they have all been so far. A row
	// group of too many distinct values is held plain instead (see
	// lookup).
	ids map[string]int32
}

// Limits of a map_key column's dictionary in a row group: past
// dictMaxBytes of values, or dictMinEntries values and a quarter of the
// rows, the rows are held plain.
const (
	dictMaxBytes   = 1 << 20
	dictMinEntries = 1 << 10
)

// reset empties c for the next row group, keeping its room.
func (c *flatCol) reset() {
	c.bools, c.i32, c.i64, c.f32, c.f64, c.data = c.bools[:0], c.i32[:0], c.i64[:0], c.f32[:0], c.f64[:0], c.data[:0]
	c.offs = append(c.offs[:0], 0)
	c.idx, c.unsorted = c.idx[:0], false
	c.defs, c.nulls = c.defs[:0], 0
	if c.ids != nil {
		clear(c.ids)
		c.dict = true
	}
}

// lookup appends a value of a map_key column with a dictionary: the index
// of src, which is added to the dictionary, checked, if it is new. Past
// the dictionary's limits the rows so far are made plain and the row
// group's later ones appended as they are.
func (c *flatCol) lookup(src []byte) error {
	if !c.dict {
		return c.decode(src)
	}
	if i, ok := c.ids[string(src)]; ok {
		c.idx = append(c.idx, i)
		c.defined()
		return nil
	}
	n := len(c.offs) - 1
	if len(c.data)+len(src) > dictMaxBytes || n >= dictMinEntries && 4*n > len(c.idx) {
		c.plain()
		return c.decode(src)
	}
	nulls := c.nulls
	if err := c.decode(src); err != nil {
		return err
	}
	if c.nulls > nulls {
		// A null, which a dictionary does not hold.
		c.plain()
		return nil
	}
	c.ids[string(src)] = int32(n)
	c.idx = append(c.idx, int32(n))
	return nil
}

// plain turns the rows of a dictionary column into values; the rows'
// definition levels stay as they are.
func (c *flatCol) plain() {
	data, offs := slices.Clone(c.data), slices.Clone(c.offs)
	c.data, c.offs = c.data[:0], c.offs[:1]
	for _, i := range c.idx {
		c.data = append(c.data, data[offs[i]:offs[i+1]]...)
		c.offs = append(c.offs, int32(len(c.data)))
	}
	c.idx, c.dict = c.idx[:0], false
}

// decode appends the value src encodes, with the checks of the builders'
// decoders (kinds.go) and their errors.
func (c *flatCol) decode(src []byte) error {
	switch c.dec {
	case flatBool:
		if len(src) != 1 || src[0] > 1 {
			return malformed("bool: want one byte 00 or 01, got % x", src)
		}
		c.bools = append(c.bools, src[0] == 1)
	case flatInt32:
		if len(src) != 4 {
			return wantBytes("int32", 4, len(src))
		}
		c.i32 = append(c.i32, int32(binary.BigEndian.Uint32(src)))
	case flatInt64, flatTimestamp:
		if len(src) != 8 {
			if c.dec == flatTimestamp {
				return wantBytes("timestamp", 8, len(src))
			}
			return wantBytes("int64", 8, len(src))
		}
		c.i64 = append(c.i64, int64(binary.BigEndian.Uint64(src)))
	case flatFloat32:
		if len(src) != 4 {
			return wantBytes("float32", 4, len(src))
		}
		c.f32 = append(c.f32, math.Float32frombits(binary.BigEndian.Uint32(src)))
	case flatFloat64:
		if len(src) != 8 {
			return wantBytes("float64", 8, len(src))
		}
		c.f64 = append(c.f64, math.Float64frombits(binary.BigEndian.Uint64(src)))
	case flatString:
		if !utf8.Valid(src) {
			return malformed("string: not valid UTF-8")
		}
		return c.appendBytes(src)
	case flatBytes:
		return c.appendBytes(src)
	default:
		return c.decodeFlink(src)
	}
	return nil
}

// defined counts a row with a value.
func (c *flatCol) defined() {
	if c.maxDef > 0 {
		c.defs = append(c.defs, c.maxDef)
	}
}

// null counts a row without a value, whose definition level is def.
func (c *flatCol) null(def int16) {
	c.defs = append(c.defs, def)
	c.nulls++
}

// decodeFlink appends the Flink value src encodes, with the checks and
// errors of directDec.
func (c *flatCol) decodeFlink(src []byte) error {
	if c.nullFlag {
		var null bool
		var err error
		if src, null, err = cutNullFlag(src); err != nil || null {
			if null {
				c.null(c.maxDef - 1)
				if c.elem != nil {
					c.elem.null(c.maxDef - 1)
				}
			}
			return err
		}
	}
	cur := &c.cur
	cur.Reset(src)
	if c.dec == flatFlinkTTL {
		c.i64 = append(c.i64, cur.Int64())
		c.defined()
		c.elem.flinkValue(cur)
	} else {
		c.flinkValue(cur)
	}
	if err := readWhole(cur); err != nil {
		return err
	}
	if len(c.data) > math.MaxInt32 {
		return malformed("a value does not fit in a row group")
	}
	return nil
}

// flinkValue appends the primitive or string that cur reads.
func (c *flatCol) flinkValue(cur *typeser.Cursor) {
	switch c.dec {
	case flatFlinkBool:
		c.bools = append(c.bools, cur.Bool())
	case flatFlinkInt32:
		c.i32 = append(c.i32, cur.Int32())
	case flatFlinkInt64:
		c.i64 = append(c.i64, cur.Int64())
	case flatFlinkFloat32:
		c.f32 = append(c.f32, cur.Float32())
	case flatFlinkFloat64:
		c.f64 = append(c.f64, cur.Float64())
	case flatFlinkString:
		var ok bool
		n := len(c.data)
		if c.data, ok = cur.AppendString(c.data); !ok {
			c.data = c.data[:n]
			c.null(c.maxDef - 1)
			return
		}
		c.offs = append(c.offs, int32(len(c.data)))
	}
	c.defined()
}

func (c *flatCol) appendBytes(b []byte) error {
	// A row group is cut at rowGroupBytes of input, far below the 2 GiB
	// that offsets of 32 bits address, unless one value is larger.
	if len(c.data)+len(b) > math.MaxInt32 {
		return malformed("a value of %d bytes does not fit in a row group", len(b))
	}
	c.data = append(c.data, b...)
	c.offs = append(c.offs, int32(len(c.data)))
	c.defined()
	return nil
}

// flatRows appends the entries of a flat dataset to its columns, as
// rowWriter.keyed appends them to builders. Absent columns are nil.
type flatRows struct {
	cols                                  []flatCol
	keyGroup, key, namespace, mapKey      *flatCol
	windowStart, windowEnd                *flatCol
	index, value, lastModified, timestamp *flatCol
	expired                               *flatCol
	ttlMillis, now                        int64
	voidCheck                             serializers.Serializer
	voidLen                               int
	// prevKey is the last key appended in this row group, and prevKG its
	// key group, where the key column holds strings or bytes: a key
	// repeats for each element of its list or map, and is checked (and
	// with a dictionary, stored) once.
	prevKey           []byte
	prevKG            int
	hasPrev, prevNull bool
}

// flat reports whether every column of l is flat.
func (l *layout) flat() bool {
	for _, f := range l.fields {
		if f.flat == notFlat {
			return false
		}
	}
	return len(l.fields) > 0
}

// newFlatRows returns the columns of a flat dataset, a Parquet leaf each;
// dictKey says that its key column, of strings or bytes, is stored with a
// dictionary (see dataset.dictKey).
func (l *layout) newFlatRows(dictKey bool) *flatRows {
	n := 0
	for _, f := range l.fields {
		n++
		if f.flat == flatFlinkTTL {
			n++
		}
	}
	r := &flatRows{cols: make([]flatCol, n), ttlMillis: l.ttlMillis, now: l.now, voidCheck: l.voidNamespace, voidLen: l.voidLen}
	i := 0
	for _, f := range l.fields {
		c := &r.cols[i]
		i++
		c.dec, c.nullFlag = f.flat, f.nullFlag
		if f.field.Nullable {
			c.maxDef = 1
		}
		c.reset()
		if f.flat == flatFlinkTTL {
			// The struct's fields: last_access, never null, and the
			// element, nullable.
			c.elem = &r.cols[i]
			i++
			c.elem.dec, c.elem.maxDef = f.flatElem, c.maxDef+1
			c.elem.reset()
		}
		switch f.field.Name {
		case colKeyGroup:
			r.keyGroup = c
		case colKey:
			r.key = c
			c.dict = dictKey
		case colNamespace:
			r.namespace = c
		case colWindowStart:
			r.windowStart = c
		case colWindowEnd:
			r.windowEnd = c
		case colMapKey:
			r.mapKey = c
			if c.stringLike() {
				c.ids, c.dict = map[string]int32{}, true
			}
		case colIndex:
			r.index = c
		case colValue:
			r.value = c
		case colLastModified:
			r.lastModified = c
		case colExpired:
			r.expired = c
		case colTimestamp:
			r.timestamp = c
		}
	}
	return r
}

// stringKey reports whether the key column of a keyed layout holds
// strings or bytes, flat.
func (l *layout) stringKey() bool {
	for _, f := range l.fields {
		if f.field.Name == colKey {
			return f.flat == flatString || f.flat == flatBytes || f.flat == flatFlinkString
		}
	}
	return false
}

// stringLike reports whether c holds strings or bytes.
func (c *flatCol) stringLike() bool {
	return c.dec == flatString || c.dec == flatBytes || c.dec == flatFlinkString
}

func (r *flatRows) reset() {
	for i := range r.cols {
		r.cols[i].reset()
	}
	r.hasPrev = false
}

// keyed appends one entry of a keyed state or timer service, with the
// checks and errors of rowWriter.keyed.
func (r *flatRows) keyed(kg int, e *savepoint.Entry, index int32) error {
	r.keyGroup.i32 = append(r.keyGroup.i32, int32(kg))
	if err := r.appendKey(kg, e.Key); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	switch {
	case r.windowStart != nil:
		if len(e.Namespace) != 16 {
			return fmt.Errorf("namespace: %w", wantBytes("window", 16, len(e.Namespace)))
		}
		r.windowStart.i64 = append(r.windowStart.i64, int64(binary.BigEndian.Uint64(e.Namespace)))
		r.windowEnd.i64 = append(r.windowEnd.i64, int64(binary.BigEndian.Uint64(e.Namespace[8:])))
	case r.namespace != nil:
		if err := r.namespace.decode(e.Namespace); err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
	case r.voidCheck != nil && r.voidLen >= 0:
		if len(e.Namespace) != r.voidLen {
			return fmt.Errorf("namespace: %w", wantBytes("void", r.voidLen, len(e.Namespace)))
		}
	case r.voidCheck != nil:
		if _, err := r.voidCheck.DecodeAny(e.Namespace); err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
	case len(e.Namespace) != 0:
		return fmt.Errorf("namespace: %w", wantBytes("void", 0, len(e.Namespace)))
	}
	if r.timestamp != nil {
		r.timestamp.i64 = append(r.timestamp.i64, e.Timestamp)
		return nil
	}
	if r.mapKey != nil {
		if err := r.mapKey.lookup(e.MapKey); err != nil {
			return fmt.Errorf("map key: %w", err)
		}
	}
	if r.index != nil {
		r.index.i32 = append(r.index.i32, index)
	}
	v := e.Value
	if r.lastModified != nil {
		if len(v) < 8 {
			return fmt.Errorf("value: %w", malformed("ttl: want at least 8 bytes, got %d", len(v)))
		}
		lm := int64(binary.BigEndian.Uint64(v))
		r.lastModified.i64 = append(r.lastModified.i64, lm)
		if r.expired != nil {
			r.expired.bools = append(r.expired.bools, ttl.Expired(lm, r.ttlMillis, r.now))
		}
		v = v[8:]
	}
	if err := r.value.decode(v); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	return nil
}

// appendKey appends key's value; a string or bytes key that repeats the
// one before is its own value, already checked.
func (r *flatRows) appendKey(kg int, key []byte) error {
	c := r.key
	if !c.stringLike() {
		return c.decode(key)
	}
	if r.hasPrev && bytes.Equal(key, r.prevKey) {
		switch {
		case r.prevNull:
			c.null(c.maxDef - 1)
		case c.dict:
			c.idx = append(c.idx, int32(len(c.offs)-2))
			c.defined()
		default:
			n := len(c.offs)
			return c.appendBytes(c.data[c.offs[n-2]:c.offs[n-1]])
		}
		return nil
	}
	if c.dict && r.hasPrev && kg == r.prevKG && bytes.Compare(key, r.prevKey) < 0 {
		c.unsorted = true
	}
	r.hasPrev = false
	nulls := c.nulls
	if err := c.decode(key); err != nil {
		return err
	}
	r.prevNull = c.nulls > nulls
	if c.dict && !r.prevNull {
		c.idx = append(c.idx, int32(len(c.offs)-2))
	}
	r.prevKey = append(r.prevKey[:0], key...)
	r.prevKG = kg
	r.hasPrev = true
	return nil
}

// dictKey reports whether the key column of ds, a flat dataset, has a
// dictionary: its keys are strings or bytes and come in runs of many rows,
// in order (a keyed state of lists, maps or namespaces such as windows,
// whose entries are sorted by key, then namespace and map key). Distinct
// keys (a value state) and keys out of order (timers, by time) are stored
// as prefix deltas.
func (ds *dataset) dictKey() bool {
	st := ds.state
	if st == nil || !ds.layout.stringKey() {
		return false
	}
	return st.Kind == savepoint.List || st.Kind == savepoint.Map || st.Namespace.NamespaceKind() != serializers.KindVoid
}
