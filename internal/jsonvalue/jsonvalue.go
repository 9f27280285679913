// Package jsonvalue holds the JSON conventions of every command's output,
// one per kind of value, so that dump, inspect, export's JSON lines and
// every report print the same value the same way:
//
//   - an instant (a TTL timestamp, a timer, a savepoint's creation, an Avro
//     timestamp) is an RFC 3339 string in UTC with the fractional digits it
//     needs, "2026-01-01T00:00:20.796Z", as Arrow writes a timestamp (export's
//     JSON lines write one outside the years 0000 to 9999, which RFC 3339
//     cannot, as an integer in its column's unit, which bootstrap reads);
//   - a duration is a whole number of milliseconds, in a field whose name
//     ends in _ms;
//   - a byte string is lowercase hex;
//   - a union is written as the Avro JSON encoding writes it: null, or an
//     object whose one member is named for the branch ({"long": 42}); a
//     union of one type, or of null and one type, is that value bare;
//   - a float has a float's precision (0.1), a double a double's;
//   - a map is a list of {"key", "value"} objects, since its keys need not
//     be strings; a window is {"start", "end"}, two instants; the void
//     namespace is null;
//   - NaN and the infinities are the strings "NaN", "+Inf", "-Inf".
//
// Field names are snake_case.
package jsonvalue

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stateproc/stateproc/serializers"
)

// TimeLayout is the layout of every instant, in UTC.
const TimeLayout = time.RFC3339Nano

// Time renders epoch milliseconds as an instant.
func Time(ms int64) string { return time.UnixMilli(ms).UTC().Format(TimeLayout) }

// Value turns a decoded value (the untyped forms of package serializers)
// into one that encoding/json renders by the conventions above.
func Value(v any) any {
	switch x := v.(type) {
	case []byte:
		return hex.EncodeToString(x)
	case float32:
		// At a float's precision: 0.1, as export writes it, not the
		// 0.10000000149011612 that the same bits read as a double.
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return jsonFloat(f)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 32))
	case float64:
		return jsonFloat(x)
	case time.Time:
		return x.UTC().Format(TimeLayout)
	case serializers.VoidNamespace:
		return nil
	case serializers.TimeWindow:
		return Object([]string{"start", "end"}, []any{Time(x.Start), Time(x.End)})
	case serializers.Present:
		return Value(x.Value)
	case []serializers.MapEntry:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i] = map[string]any{"key": Value(e.Key), "value": Value(e.Value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Value(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Value(e)
		}
		return out
	}
	return v
}

func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return f
}

// Instant is a time in epoch milliseconds that encoding/json writes as an
// instant, for the fields of reports.
type Instant int64

// MarshalJSON writes the instant as Time does.
func (t Instant) MarshalJSON() ([]byte, error) { return json.Marshal(Time(int64(t))) }

// UnmarshalJSON reads what MarshalJSON writes.
func (t *Instant) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(TimeLayout, s)
	if err != nil {
		return err
	}
	*t = Instant(v.UnixMilli())
	return nil
}

// Ptr returns a pointer to an Instant of ms, for optional fields.
func Ptr(ms int64) *Instant { t := Instant(ms); return &t }

// Duration renders a duration in milliseconds compactly, with days, as
// reports name a TTL beside its _ms field: 7d, 1d18h, 90m as 1h30m, 1500
// as 1s500ms.
func Duration(ms int64) string {
	if ms == 0 {
		return "0s"
	}
	var b strings.Builder
	if ms < 0 {
		b.WriteByte('-')
		ms = -ms
	}
	for _, u := range []struct {
		name string
		size int64
	}{{"d", 86_400_000}, {"h", 3_600_000}, {"m", 60_000}, {"s", 1000}, {"ms", 1}} {
		if n := ms / u.size; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			ms -= n * u.size
		}
	}
	return b.String()
}
