package cli

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stateproc/stateproc/serializers"
)

// jsonValue turns a decoded value (the untyped forms of package
// serializers) into one that encoding/json renders faithfully: map entries
// as {"key", "value"} objects since their keys need not be strings, byte
// strings as hex like --raw, NaN and infinities as strings, times in RFC
// 3339, windows as {"start", "end"}, the void namespace as null.
func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return hex.EncodeToString(x)
	case float32:
		return jsonFloat(float64(x))
	case float64:
		return jsonFloat(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case serializers.VoidNamespace:
		return nil
	case serializers.TimeWindow:
		return map[string]int64{"start": x.Start, "end": x.End}
	case serializers.Present:
		return jsonValue(x.Value)
	case []serializers.MapEntry:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i] = map[string]any{"key": jsonValue(e.Key), "value": jsonValue(e.Value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
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

// cellText renders a decoded value for a table cell: strings as they are,
// anything else as compact JSON.
func cellText(v any) string {
	v = jsonValue(v)
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// formatMillis renders a duration in milliseconds compactly, with days:
// 7d, 1d18h, 90m as 1h30m, 1500 as 1s500ms.
func formatMillis(ms int64) string {
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
