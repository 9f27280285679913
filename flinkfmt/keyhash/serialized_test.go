package keyhash_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
)

func restore(t *testing.T, s flinkfmt.Snapshot) *typeser.Serializer {
	t.Helper()
	b, err := s.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	ser, err := typeser.ReadVersioned(wire.New(b, 0))
	if err != nil {
		t.Fatal(err)
	}
	return ser
}

// units is StringValue.writeString of the given UTF-16 units.
func units(us ...uint32) []byte {
	b := appendVarint(nil, uint32(len(us)+1))
	for _, u := range us {
		b = appendVarint(b, u)
	}
	return b
}

func appendVarint(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func TestKeyGroupOfSerializedKeys(t *testing.T) {
	str := restore(t, flinkfmt.SimpleSnapshot(flinkfmt.StringSnapshotClass))
	long := restore(t, flinkfmt.SimpleSnapshot(flinkfmt.LongSnapshotClass))
	tupleSnap, err := flinkfmt.TupleSnapshot("org.apache.flink.api.java.tuple.Tuple2",
		flinkfmt.SimpleSnapshot(flinkfmt.LongSnapshotClass), flinkfmt.SimpleSnapshot(flinkfmt.StringSnapshotClass))
	if err != nil {
		t.Fatal(err)
	}
	tuple := restore(t, tupleSnap)
	for _, s := range []*typeser.Serializer{str, long, tuple} {
		if err := keyhash.Hashable(s); err != nil {
			t.Errorf("%s: %v", s.Type, err)
		}
	}
	for _, c := range []struct {
		s    *typeser.Serializer
		b    []byte
		hash int32
	}{
		{str, units('h', 'e', 'l', 'l', 'o'), 99162322},
		// An unpaired surrogate: "\uD800".hashCode() is 55296; decoded to a
		// Go string it would become U+FFFD and hash as 65533.
		{str, units(0xD800), 0xD800},
		{str, units(0xD83D, 0xDE00), 31*0xD83D + 0xDE00},
		{long, []byte{0, 0, 0, 1, 0, 0, 0, 0}, 1},
		// Tuple2(3L, "a"): 31 * 3 + 'a'.
		{tuple, append([]byte{0, 0, 0, 0, 0, 0, 0, 3}, units('a')...), 31*3 + 'a'},
	} {
		got, err := keyhash.KeyGroupOf(c.s, c.b, 128)
		if want := keyhash.KeyGroup(c.hash, 128); err != nil || got != want {
			t.Errorf("%s % x: key group %d, %v; want %d", c.s.Type, c.b, got, err, want)
		}
	}
	for _, b := range [][]byte{units('a')[:1], append(units('a'), 0), {0}, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF}} {
		if _, err := keyhash.KeyGroupOf(str, b, 128); err == nil {
			t.Errorf("string key % x hashed", b)
		}
	}
}

// Keys whose Java hashCode is not defined by their value are refused by
// their class, with the reason.
func TestHashableRefusesByClass(t *testing.T) {
	pojoBody := func() []byte {
		b := []byte{0, 17}
		b = append(b, "org.example.Order"...)
		for range 3 { // LinkedOptionalMap header, no entries
			b = append(b, 0, 0, 0x04, 0xF2, 0xC6, 0x9A, 0x3D, 0x70, 0, 0, 0, 0)
		}
		return b
	}()
	for _, c := range []struct {
		snap       flinkfmt.Snapshot
		class, why string
	}{
		{flinkfmt.Snapshot{Class: "org.apache.flink.api.java.typeutils.runtime.PojoSerializerSnapshot", Version: 2, Body: pojoBody}, "org.example.Order", "POJO may override hashCode"},
		{flinkfmt.SimpleSnapshot("org.apache.flink.api.common.typeutils.base.CharSerializer$CharSerializerSnapshot"), "java.lang.Character", "not one that this rewrite computes"},
	} {
		err := keyhash.Hashable(restore(t, c.snap))
		if !errors.Is(err, keyhash.ErrNotValueHashed) || !strings.Contains(err.Error(), c.class) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v", c.snap.Class, err)
		}
	}
}
