package export

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// Column names. They are the same for every dataset of a kind, so that one
// query fits every state of a kind.
const (
	colKeyGroup     = "key_group"
	colKey          = "key"
	colNamespace    = "namespace"
	colWindowStart  = "window_start"
	colWindowEnd    = "window_end"
	colMapKey       = "map_key"
	colIndex        = "index"
	colValue        = "value"
	colLastModified = "ttl_last_modified"
	colExpired      = "expired"
	colTimestamp    = "timestamp"
	colSubtask      = "subtask"
)

// A layout is the columns of one dataset, each with how it binds to the
// builder of its field: the schema and the binding come from the same list,
// so they cannot disagree.
type layout struct {
	fields []fieldSpec
	// ttlMillis and now are for the expired column.
	ttlMillis, now int64
	// voidNamespace, when set, checks the bytes of a void namespace that
	// takes some (Flink's): a void namespace has no column. voidLen, when
	// not negative, is their length, which is check enough for a constant.
	voidNamespace serializers.Serializer
	voidLen       int
}

type fieldSpec struct {
	field arrow.Field
	bind  func(w *rowWriter, b array.Builder)
	// flat is how the column decodes into a flatCol, or notFlat;
	// flatElem and nullFlag are column's.
	flat     flatDec
	flatElem flatDec
	nullFlag bool
}

func (l *layout) add(name string, c column, bind func(w *rowWriter, d decoder)) {
	l.fields = append(l.fields, fieldSpec{
		field:    arrow.Field{Name: name, Type: c.typ, Nullable: c.nullable},
		bind:     func(w *rowWriter, b array.Builder) { bind(w, c.bind(b)) },
		flat:     c.flat,
		flatElem: c.flatElem,
		nullFlag: c.nullFlag,
	})
}

func (l *layout) addBuilder(name string, typ arrow.DataType, flat flatDec, bind func(w *rowWriter, b array.Builder)) {
	l.fields = append(l.fields, fieldSpec{field: arrow.Field{Name: name, Type: typ}, bind: bind, flat: flat})
}

func (l *layout) arrowFields() []arrow.Field {
	out := make([]arrow.Field, len(l.fields))
	for i, f := range l.fields {
		out[i] = f.field
	}
	return out
}

// keyedLayout lays out a keyed state or, with st nil, timer service tsvc:
// the key group, the key, the namespace unless it is void, then what the
// state's kind stores.
func keyedLayout(op *savepoint.Operator, st *savepoint.KeyedState, tsvc *savepoint.TimerService, now *int64) (*layout, error) {
	l := &layout{voidLen: -1}
	l.addBuilder(colKeyGroup, arrow.PrimitiveTypes.Int32, flatInt32, func(w *rowWriter, b array.Builder) { w.keyGroup = b.(*array.Int32Builder) })
	key, err := columnFor(op.Key, colKey)
	if err != nil {
		return nil, err
	}
	l.fields = append(l.fields, fieldSpec{
		field:    arrow.Field{Name: colKey, Type: key.typ, Nullable: key.nullable},
		flat:     key.flat,
		flatElem: key.flatElem,
		nullFlag: key.nullFlag,
		bind: func(w *rowWriter, b array.Builder) {
			w.key = key.bind(b)
			switch b := b.(type) {
			case *array.BinaryBuilder:
				w.keyBytes = b
			case *array.StringBuilder:
				w.keyBytes = b.BinaryBuilder
			}
		},
	})
	ns := namespaceOf(st, tsvc)
	switch ns.NamespaceKind() {
	case serializers.KindVoid:
		if ns.Kind == serializers.KindExternal {
			if l.voidNamespace, err = serializers.Restore(ns); err != nil {
				return nil, err
			}
			if fs, ok := ns.External.(flinkShaper); ok {
				if sh, flag := fs.FlinkShape(); sh != nil && sh.Kind == typeser.ShapeConstant && !flag {
					l.voidLen = sh.Len
				}
			}
		}
	case serializers.KindWindow:
		l.addBuilder(colWindowStart, timestampMillis, flatTimestamp, func(w *rowWriter, b array.Builder) { w.window.start = b.(*array.TimestampBuilder) })
		l.addBuilder(colWindowEnd, timestampMillis, flatTimestamp, func(w *rowWriter, b array.Builder) { w.window.end = b.(*array.TimestampBuilder) })
	default:
		c, err := columnFor(ns, colNamespace)
		if err != nil {
			return nil, err
		}
		l.add(colNamespace, c, func(w *rowWriter, d decoder) { w.namespace = d })
	}
	if st == nil {
		l.addBuilder(colTimestamp, timestampMillis, flatTimestamp, func(w *rowWriter, b array.Builder) { w.timestamp = b.(*array.TimestampBuilder) })
		return l, nil
	}
	if st.Kind == savepoint.Map {
		c, err := columnFor(st.MapKey, colMapKey)
		if err != nil {
			return nil, err
		}
		l.add(colMapKey, c, func(w *rowWriter, d decoder) { w.mapKey = d })
	}
	if st.Kind == savepoint.List {
		l.addBuilder(colIndex, arrow.PrimitiveTypes.Int32, flatInt32, func(w *rowWriter, b array.Builder) { w.index = b.(*array.Int32Builder) })
	}
	value, err := columnFor(st.Value, colValue)
	if err != nil {
		return nil, err
	}
	l.add(colValue, value, func(w *rowWriter, d decoder) { w.value = d })
	if st.TTL != nil {
		l.addBuilder(colLastModified, timestampMillis, flatTimestamp, func(w *rowWriter, b array.Builder) { w.lastModified = b.(*array.TimestampBuilder) })
		if now != nil {
			l.ttlMillis, l.now = st.TTL.Millis(), *now
			l.addBuilder(colExpired, arrow.FixedWidthTypes.Boolean, flatBool, func(w *rowWriter, b array.Builder) { w.expired = b.(*array.BooleanBuilder) })
		}
	}
	return l, nil
}

func namespaceOf(st *savepoint.KeyedState, t *savepoint.TimerService) serializers.Snapshot {
	if st != nil {
		return st.Namespace
	}
	return t.Namespace
}

// operatorStateLayout lays out operator list state: the subtask that held
// each element, its index in that subtask's list, and the element.
func operatorStateLayout(s *savepoint.OperatorState) (*layout, error) {
	l := &layout{voidLen: -1}
	l.addBuilder(colSubtask, arrow.PrimitiveTypes.Int32, flatInt32, func(w *rowWriter, b array.Builder) { w.subtask = b.(*array.Int32Builder) })
	l.addBuilder(colIndex, arrow.PrimitiveTypes.Int32, flatInt32, func(w *rowWriter, b array.Builder) { w.index = b.(*array.Int32Builder) })
	value, err := columnFor(s.Element, colValue)
	if err != nil {
		return nil, err
	}
	l.add(colValue, value, func(w *rowWriter, d decoder) { w.value = d })
	return l, nil
}

// broadcastLayout lays out a broadcast state's map: key and value.
func broadcastLayout(s *savepoint.BroadcastState) (*layout, error) {
	l := &layout{voidLen: -1}
	key, err := columnFor(s.Key, colKey)
	if err != nil {
		return nil, err
	}
	l.add(colKey, key, func(w *rowWriter, d decoder) { w.key = d })
	value, err := columnFor(s.Value, colValue)
	if err != nil {
		return nil, err
	}
	l.add(colValue, value, func(w *rowWriter, d decoder) { w.value = d })
	return l, nil
}

// rowWriter appends entries as rows to a record builder of its layout.
// Unused columns are nil.
type rowWriter struct {
	keyGroup, index, subtask    *array.Int32Builder
	key, namespace, mapKey      decoder
	value                       decoder
	window                      windowDec
	lastModified, timestamp     *array.TimestampBuilder
	expired                     *array.BooleanBuilder
	ttlMillis, now              int64
	voidNamespace, windowedKeys bool
	voidCheck                   serializers.Serializer
	voidLen                     int
	// keyBytes is the key's builder where it holds strings or bytes, and
	// prevKey and prevValue the last key it was given, encoded and as
	// appended: a key repeats for each element of its list or map, and
	// its column repeats the value without decoding the key again.
	keyBytes             *array.BinaryBuilder
	prevKey, prevValue   []byte
	prevKeyNull, hasPrev bool
}

func (l *layout) bind(rb *array.RecordBuilder) *rowWriter {
	w := &rowWriter{ttlMillis: l.ttlMillis, now: l.now, voidCheck: l.voidNamespace, voidLen: l.voidLen}
	for i, f := range l.fields {
		f.bind(w, rb.Field(i))
	}
	w.windowedKeys = w.window.start != nil
	w.voidNamespace = w.namespace == nil && !w.windowedKeys
	return w
}

// keyed appends one entry of a keyed state or timer service; index is the
// element's position in its list, for list states.
func (w *rowWriter) keyed(kg int, e *savepoint.Entry, index int32) error {
	w.keyGroup.Append(int32(kg))
	if err := w.appendKey(e.Key); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	switch {
	case w.windowedKeys:
		if err := w.window.decode(e.Namespace); err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
	case w.voidNamespace && w.voidCheck != nil && w.voidLen >= 0:
		if len(e.Namespace) != w.voidLen {
			return fmt.Errorf("namespace: %w", wantBytes("void", w.voidLen, len(e.Namespace)))
		}
	case w.voidNamespace && w.voidCheck != nil:
		if _, err := w.voidCheck.DecodeAny(e.Namespace); err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
	case w.voidNamespace:
		if len(e.Namespace) != 0 {
			return fmt.Errorf("namespace: %w", wantBytes("void", 0, len(e.Namespace)))
		}
	default:
		if err := w.namespace.decode(e.Namespace); err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
	}
	if w.timestamp != nil {
		w.timestamp.Append(arrow.Timestamp(e.Timestamp))
		return nil
	}
	if w.mapKey != nil {
		if err := w.mapKey.decode(e.MapKey); err != nil {
			return fmt.Errorf("map key: %w", err)
		}
	}
	if w.index != nil {
		w.index.Append(index)
	}
	v := e.Value
	if w.lastModified != nil {
		if len(v) < 8 {
			return fmt.Errorf("value: %w", malformed("ttl: want at least 8 bytes, got %d", len(v)))
		}
		lm := int64(binary.BigEndian.Uint64(v))
		w.lastModified.Append(arrow.Timestamp(lm))
		if w.expired != nil {
			w.expired.Append(ttl.Expired(lm, w.ttlMillis, w.now))
		}
		v = v[8:]
	}
	if err := w.value.decode(v); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	return nil
}

// appendKey appends the value of key, the one the row before had if the
// key is the same.
func (w *rowWriter) appendKey(key []byte) error {
	b := w.keyBytes
	switch {
	case b == nil:
		return w.key.decode(key)
	case w.hasPrev && bytes.Equal(key, w.prevKey):
		if w.prevKeyNull {
			b.AppendNull()
		} else {
			b.Append(w.prevValue)
		}
		return nil
	}
	w.hasPrev = false
	if err := w.key.decode(key); err != nil {
		return err
	}
	last := b.Len() - 1
	w.prevKey = append(w.prevKey[:0], key...)
	w.prevKeyNull = b.IsNull(last)
	w.prevValue = append(w.prevValue[:0], b.Value(last)...)
	w.hasPrev = true
	return nil
}

// operatorElement appends element i of a subtask's operator list state.
func (w *rowWriter) operatorElement(subtask, i int, elem []byte) error {
	w.subtask.Append(int32(subtask))
	w.index.Append(int32(i))
	if err := w.value.decode(elem); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	return nil
}

// broadcastEntry appends one entry of a broadcast state.
func (w *rowWriter) broadcastEntry(e savepoint.BroadcastEntry) error {
	if err := w.key.decode(e.Key); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if err := w.value.decode(e.Value); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	return nil
}
