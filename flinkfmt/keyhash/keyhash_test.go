package keyhash

import (
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
)

// The vectors NOTES.md verified on Flink's fixtures: Integer keys at max
// parallelism 128. Reading the hash as unsigned gives 42 for key 1, which
// is wrong.
func TestKeyGroupVectors(t *testing.T) {
	for _, c := range []struct{ key, kg int }{{4, 7}, {9, 51}, {1, 86}} {
		if got := KeyGroup(int32(c.key), 128); got != c.kg {
			t.Errorf("key %d: key group %d, want %d", c.key, got, c.kg)
		}
	}
	if Murmur(-2147483648) < 0 {
		t.Error("murmur of MIN_VALUE is negative")
	}
}

func TestHashCodeMatchesJava(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int32
	}{
		{"", 0},
		{"hello", 99162322}, // "hello".hashCode()
		{"Here be dragons!", 1077336718},
		{"\U0001F600", 31*0xD83D + 0xDE00}, // two UTF-16 units
		{int64(3), 3},
		{int64(-1), 0},
		{int64(1) << 32, 1},
		{true, 1231},
		{false, 1237},
		{int32(-7), -7},
		{typeser.RecordValue{Class: "org.apache.flink.api.java.tuple.Tuple2", Fields: []typeser.FieldValue{{Name: "f0", Value: int64(1)}, {Name: "f1", Value: int64(2)}}}, 31*1 + 2},
	} {
		got, ok := HashCode(c.v)
		if !ok || got != c.want {
			t.Errorf("HashCode(%#v) = %d, %v; want %d", c.v, got, ok, c.want)
		}
	}
	if _, ok := HashCode(typeser.RecordValue{Class: "org.example.Pojo"}); ok {
		t.Error("a POJO's hashCode is not defined by value")
	}
}
