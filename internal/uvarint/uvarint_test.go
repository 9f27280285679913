package uvarint

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestLenMatchesPutUvarint(t *testing.T) {
	var buf [binary.MaxVarintLen64]byte
	for _, v := range []uint64{0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 1<<21 - 1, 1 << 21, 1<<56 - 1, 1 << 56, 1<<63 - 1, 1 << 63, math.MaxUint64} {
		if got, want := Len(v), binary.PutUvarint(buf[:], v); got != want {
			t.Errorf("Len(%#x) = %d, want %d", v, got, want)
		}
	}
}
