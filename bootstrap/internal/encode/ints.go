package encode

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

const (
	minInt32 = math.MinInt32
	maxInt32 = math.MaxInt32
	minInt64 = math.MinInt64
	maxInt64 = math.MaxInt64
)

func putBE32(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }
func putBE64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

// putVarint writes an Avro int or long: zigzag, then a varint.
func putVarint(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

// A unit says what an integer serializer counts, and so which Arrow
// temporal types and JSON strings it takes besides plain integers.
type unit uint8

const (
	unitNone unit = iota
	unitInstantMs
	unitInstantUs
	unitLocalMs
	unitLocalUs
	unitDate
	unitTimeMs
	unitTimeUs
)

// Nanoseconds per step of each scale a value can be counted in.
const (
	nsPerNs  = 1
	nsPerUs  = 1000
	nsPerMs  = 1000_000
	nsPerSec = 1000_000_000
	nsPerDay = 86400 * nsPerSec
)

func (u unit) step() int64 {
	switch u {
	case unitInstantMs, unitLocalMs, unitTimeMs:
		return nsPerMs
	case unitInstantUs, unitLocalUs, unitTimeUs:
		return nsPerUs
	case unitDate:
		return nsPerDay
	}
	return 1
}

func (u unit) noun() string {
	switch u.step() {
	case nsPerMs:
		return "millisecond"
	case nsPerUs:
		return "microsecond"
	case nsPerDay:
		return "day"
	}
	return "unit"
}

func arrowStep(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return nsPerSec
	case arrow.Millisecond:
		return nsPerMs
	case arrow.Microsecond:
		return nsPerUs
	}
	return nsPerNs
}

// rescale converts v, counted in steps of from nanoseconds, to steps of
// to: exactly, or not at all.
func rescale(v, from, to int64, noun string) (int64, error) {
	switch {
	case from == to:
		return v, nil
	case from > to:
		m := from / to
		if v > math.MaxInt64/m || v < math.MinInt64/m {
			return 0, errorf("%d overflows a count of %ss", v, noun)
		}
		return v * m, nil
	}
	d := to / from
	if v%d != 0 {
		return 0, errorf("%d is not a whole number of %ss", v, noun)
	}
	return v / d, nil
}

// intNode is every serializer of one integer: int32, int64, timestamp,
// and Avro's int and long with their logical types.
type intNode struct {
	name     string
	min, max int64
	unit     unit
	put      func(dst []byte, v int64) []byte
}

func (n *intNode) what() string { return n.name }

// sourceStep is the step, in nanoseconds, that an Arrow type counts in
// when n takes it: 0 when n does not take it, -1 for a plain integer.
func (n *intNode) sourceStep(dt arrow.DataType) int64 {
	if isInteger(dt) {
		return -1
	}
	switch t := dt.(type) {
	case *arrow.TimestampType:
		if n.unit == unitInstantMs || n.unit == unitInstantUs || n.unit == unitLocalMs || n.unit == unitLocalUs {
			return arrowStep(t.Unit)
		}
	case *arrow.Date32Type:
		if n.unit == unitDate || n.unit == unitInstantMs || n.unit == unitInstantUs {
			return nsPerDay
		}
	case *arrow.Date64Type:
		if n.unit == unitDate || n.unit == unitInstantMs || n.unit == unitInstantUs {
			return nsPerMs
		}
	case *arrow.Time32Type:
		if n.unit == unitTimeMs || n.unit == unitTimeUs {
			return arrowStep(t.Unit)
		}
	case *arrow.Time64Type:
		if n.unit == unitTimeMs || n.unit == unitTimeUs {
			return arrowStep(t.Unit)
		}
	}
	return 0
}

func (n *intNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	step := n.sourceStep(dt)
	if step == 0 {
		return nil, errorf("a column of %s cannot hold %s values", dt, n.name)
	}
	return &intEnc{n: n, step: step}, nil
}

// fit checks v, counted in steps of from nanoseconds (-1: in n's own
// steps), and encodes it.
func (n *intNode) fit(dst []byte, v, from int64) ([]byte, error) {
	if from > 0 {
		var err error
		if v, err = rescale(v, from, n.unit.step(), n.unit.noun()); err != nil {
			return dst, err
		}
	}
	if v < n.min || v > n.max {
		return dst, errorf("%d is out of the range of %s", v, n.name)
	}
	return n.put(dst, v), nil
}

type intEnc struct {
	n    *intNode
	step int64
	arr  arrow.Array
	get  func(i int) (int64, bool)
}

func (e *intEnc) bind(arr arrow.Array) { e.arr, e.get = arr, intValues(arr) }

func (e *intEnc) append(dst []byte, i int) ([]byte, error) {
	if isNull(e.arr, i) {
		return dst, errNull(e.n)
	}
	if e.get == nil {
		return dst, errType(e.arr, e.n)
	}
	v, ok := e.get(i)
	if !ok {
		return dst, errorf("%d is out of the range of %s", uint64(v), e.n.name)
	}
	return e.n.fit(dst, v, e.step)
}

func (n *intNode) appendJSON(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			return dst, errorf("%s is not an integer of 64 bits", x)
		}
		return n.fit(dst, i, -1)
	case string:
		if n.unit != unitNone {
			ns, step, err := parseTemporal(x, n.unit)
			if err != nil {
				return dst, err
			}
			return n.fit(dst, ns, step)
		}
	case nil:
		return dst, errNull(n)
	}
	return dst, errorf("want %s, got %s", n.jsonForm(), jsonKind(v))
}

func (n *intNode) jsonForm() string {
	switch n.unit {
	case unitInstantMs, unitInstantUs:
		return "an RFC 3339 time or an integer"
	case unitLocalMs, unitLocalUs:
		return "a local time (2006-01-02T15:04:05) or an integer"
	case unitDate:
		return "a date (2006-01-02) or an integer"
	case unitTimeMs, unitTimeUs:
		return "a time of day (15:04:05) or an integer"
	}
	return "an integer"
}

// parseTemporal reads the JSON form of a time for unit u: the value, and
// the step it counts in.
func parseTemporal(s string, u unit) (int64, int64, error) {
	var layout string
	switch u {
	case unitInstantMs, unitInstantUs:
		layout = time.RFC3339Nano
	case unitLocalMs, unitLocalUs:
		layout = "2006-01-02T15:04:05.999999999"
	case unitDate:
		layout = time.DateOnly
	default:
		layout = "15:04:05.999999999"
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return 0, 0, errorf("%q is not %s", s, (&intNode{unit: u}).jsonForm())
	}
	if u == unitTimeMs || u == unitTimeUs {
		d := time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
			time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
		return int64(d), nsPerNs, nil
	}
	if u == unitDate {
		return t.Unix() / 86400, nsPerDay, nil
	}
	// Seconds and nanoseconds apart: a count of nanoseconds overflows
	// beyond 2262.
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	step := u.step()
	if nsec%step != 0 {
		return 0, 0, errorf("%q is not a whole number of %ss", s, u.noun())
	}
	v, err := rescale(sec, nsPerSec, step, u.noun())
	if err != nil {
		return 0, 0, err
	}
	if v > math.MaxInt64-nsec/step {
		return 0, 0, errorf("%q overflows a count of %ss", s, u.noun())
	}
	return v + nsec/step, step, nil
}

func isInteger(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// intValues reads the values of an integer or temporal array as int64s,
// in the array's own unit; false for a uint64 beyond the int64 range. It
// is nil for an array of another type.
func intValues(arr arrow.Array) func(i int) (int64, bool) {
	switch a := arr.(type) {
	case *array.Int8:
		return widen(a.Int8Values())
	case *array.Int16:
		return widen(a.Int16Values())
	case *array.Int32:
		return widen(a.Int32Values())
	case *array.Int64:
		return widen(a.Int64Values())
	case *array.Uint8:
		return widen(a.Uint8Values())
	case *array.Uint16:
		return widen(a.Uint16Values())
	case *array.Uint32:
		return widen(a.Uint32Values())
	case *array.Uint64:
		v := a.Uint64Values()
		return func(i int) (int64, bool) { return int64(v[i]), v[i] <= math.MaxInt64 }
	case *array.Timestamp:
		return widen(a.TimestampValues())
	case *array.Date32:
		return widen(a.Date32Values())
	case *array.Date64:
		return widen(a.Date64Values())
	case *array.Time32:
		return widen(a.Time32Values())
	case *array.Time64:
		return widen(a.Time64Values())
	}
	return nil
}

func widen[T ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32](v []T) func(i int) (int64, bool) {
	return func(i int) (int64, bool) { return int64(v[i]), true }
}

func errNull(n node) error { return errorf("null, and %s cannot be null", n.what()) }

// errType is a batch whose array is not of the type its encoder was made
// for: a file whose batches change type.
func errType(arr arrow.Array, n node) error {
	return errorf("a batch of %s, not of the file's type for %s", arr.DataType(), n.what())
}

// jsonKind names the JSON type of v, for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a value"
}
