package snapshotfmt

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAfterAgreesWithBytesCompare checks the fast comparison of map keys on
// short and long keys, with and without spare capacity behind them.
func TestAfterAgreesWithBytesCompare(t *testing.T) {
	keys := [][]byte{nil, {}, {0}, {0, 0}, {1}, []byte("cat-000"), []byte("cat-000\x00"), []byte("cat-001"),
		[]byte("cat-0000"), []byte("cat-0000\x00"), []byte("cat-00000"), []byte("cat-0000\xff"), []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff")}
	rng := rand.New(rand.NewPCG(3, 5))
	for range 2000 {
		k := make([]byte, rng.IntN(12))
		for i := range k {
			k[i] = byte(rng.IntN(3)) // few symbols, so many shared prefixes
		}
		keys = append(keys, k)
	}
	// Each key alone in its buffer, and inside a larger buffer whose
	// other bytes are zeros or 0xff.
	type placed struct {
		buf        []byte
		start, end int
	}
	places := func(k []byte) []placed {
		out := []placed{{slices.Clone(k), 0, len(k)}}
		for _, fill := range []byte{0, 0xff} {
			buf := bytes.Repeat([]byte{fill}, len(k)+11)
			copy(buf[3:], k)
			out = append(out, placed{buf, 3, 3 + len(k)})
		}
		return out
	}
	for i, a := range keys {
		for _, b := range keys[max(0, i-40):min(len(keys), i+40)] {
			want := bytes.Compare(a, b) > 0
			for _, pa := range places(a) {
				for _, pb := range places(b) {
					ka, kb := pa.buf[pa.start:pa.end], pb.buf[pb.start:pb.end]
					xa, xb := prefix8(pa.buf, pa.start, len(ka)), prefix8(pb.buf, pb.start, len(kb))
					if got := after(ka, kb, xa, xb); got != want {
						t.Fatalf("after(%q, %q) = %v, want %v", a, b, got, want)
					}
				}
			}
		}
	}
}
