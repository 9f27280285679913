package cli

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/stateproc/stateproc/serializers"
)

// encodeKeyArg turns a key given on the command line into the bytes the key
// serializer writes for it, so that its key group can be computed. A string
// key is taken as is, numbers and booleans are parsed, bytes are hex, a
// timestamp is RFC 3339 or epoch milliseconds, and an Avro key is JSON.
func encodeKeyArg(ser serializers.Serializer, arg string) ([]byte, error) {
	snap := ser.Snapshot()
	var v any
	var err error
	switch snap.Kind {
	case serializers.KindString:
		v = arg
	case serializers.KindInt64:
		v, err = strconv.ParseInt(arg, 10, 64)
	case serializers.KindInt32:
		var n int64
		n, err = strconv.ParseInt(arg, 10, 32)
		v = int32(n)
	case serializers.KindBool:
		v, err = strconv.ParseBool(arg)
	case serializers.KindFloat64:
		v, err = strconv.ParseFloat(arg, 64)
	case serializers.KindFloat32:
		var f float64
		f, err = strconv.ParseFloat(arg, 32)
		v = float32(f)
	case serializers.KindBytes:
		v, err = hex.DecodeString(arg)
	case serializers.KindTimestamp:
		var ms int64
		ms, err = parseTime(arg)
		v = time.UnixMilli(ms)
	case serializers.KindAvro:
		v, err = avroFromJSON(arg)
	default:
		return nil, usagef("--key: keys of type %s cannot be given on the command line", snap)
	}
	if err != nil {
		return nil, usagef("--key %q is not a %s key: %v", arg, snap, err)
	}
	b, err := ser.AppendAny(nil, v)
	if err != nil {
		return nil, usagef("--key %q is not a %s key: %v", arg, snap, err)
	}
	return b, nil
}

// avroFromJSON reads a JSON value into the generic form the Avro encoder
// takes: integral numbers as int, which it accepts for both Avro int and
// long, others as float64.
func avroFromJSON(s string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbersToGo(v), nil
}

func numbersToGo(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.Atoi(x.String()); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = numbersToGo(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = numbersToGo(x[k])
		}
	}
	return v
}
