package heapbackend

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"testing"
)

// TestIdentifiersSortLikeTuples checks the property the snapshot and the
// timer queue rely on: comparing identifiers compares (time, key,
// namespace) component by component, and splitID gives the parts back.
func TestIdentifiersSortLikeTuples(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	part := func() []byte {
		// Few distinct bytes, zeros and 0xFF among them, so that prefixes
		// and escapes are common.
		b := make([]byte, rng.IntN(4))
		for i := range b {
			b[i] = []byte{0, 1, 0xFF}[rng.IntN(3)]
		}
		return b
	}
	times := []int64{-1 << 63, -2, -1, 0, 1, 1<<63 - 1}
	type tuple struct {
		ts      int64
		key, ns []byte
	}
	id := func(x tuple) string { return string(append(appendKey(appendTime(nil, x.ts), x.key), x.ns...)) }
	for range 20000 {
		a := tuple{times[rng.IntN(len(times))], part(), part()}
		b := tuple{times[rng.IntN(len(times))], part(), part()}
		want := cmp.Or(cmp.Compare(a.ts, b.ts), bytes.Compare(a.key, b.key), bytes.Compare(a.ns, b.ns))
		if got := cmp.Compare(id(a), id(b)); got != want {
			t.Fatalf("identifiers of %v and %v compare as %d, the tuples as %d", a, b, got, want)
		}
		key, ns := splitID(id(a)[8:], nil)
		if !bytes.Equal(key, a.key) || ns != string(a.ns) {
			t.Fatalf("splitID of %v gave key %x, namespace %x", a, key, ns)
		}
	}
}
