package keyhash

import (
	"math"
	"strings"
	"unicode/utf16"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
)

// Murmur is Flink's MathUtils.murmurHash: murmur3's mixing of one int, its
// finalizer, then the absolute value (Integer.MIN_VALUE gives 0).
func Murmur(code int32) int32 {
	c := uint32(code)
	c *= 0xcc9e2d51
	c = c<<15 | c>>17
	c *= 0x1b873593
	c = c<<13 | c>>19
	c = c*5 + 0xe6546b64
	c ^= 4
	c ^= c >> 16
	c *= 0x85ebca6b
	c ^= c >> 13
	c *= 0xc2b2ae35
	c ^= c >> 16
	h := int32(c)
	switch {
	case h >= 0:
		return h
	case h != math.MinInt32:
		return -h
	}
	return 0
}

// KeyGroup is KeyGroupRangeAssignment.assignToKeyGroup for a key whose
// hashCode is hash.
func KeyGroup(hash int32, maxParallelism int) int {
	return int(Murmur(hash) % int32(maxParallelism))
}

// tuplePrefix names Flink's Java tuples, whose hashCode combines the
// fields' with 31 as the multiplier.
const tuplePrefix = "org.apache.flink.api.java.tuple.Tuple"

// HashCode returns Java's hashCode of a key decoded by typeser, or false
// when Java does not define it by the value.
func HashCode(v any) (int32, bool) {
	switch x := v.(type) {
	case string:
		var h int32
		for _, u := range utf16.Encode([]rune(x)) {
			h = 31*h + int32(u)
		}
		return h, true
	case int32:
		return x, true
	case int64:
		return int32(x ^ int64(uint64(x)>>32)), true
	case int16:
		return int32(x), true
	case int8:
		return int32(x), true
	case bool:
		if x {
			return 1231, true
		}
		return 1237, true
	case float64:
		b := math.Float64bits(x)
		if x != x {
			b = 0x7ff8000000000000
		}
		return int32(int64(b) ^ int64(b>>32)), true
	case float32:
		b := math.Float32bits(x)
		if x != x {
			b = 0x7fc00000
		}
		return int32(b), true
	case typeser.RecordValue:
		if !strings.HasPrefix(x.Class, tuplePrefix) {
			return 0, false
		}
		var h int32
		for i, f := range x.Fields {
			fh := int32(0)
			if f.Value != nil {
				var ok bool
				if fh, ok = HashCode(f.Value); !ok {
					return 0, false
				}
			}
			if i == 0 {
				h = fh
			} else {
				h = 31*h + fh
			}
		}
		return h, true
	}
	return 0, false
}
