package pebblebackend

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// alphabet is small and full of the bytes the escape treats specially, so
// random strings often are prefixes of each other and contain 0x00.
var alphabet = []byte{0x00, 0x01, 0x02, 0xFE, 0xFF}

func randomString(r *rand.Rand, maxLen int) []byte {
	b := make([]byte, r.IntN(maxLen+1))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}

// allStrings returns every string over alphabet up to maxLen bytes.
func allStrings(maxLen int) [][]byte {
	out := [][]byte{{}}
	prev := [][]byte{{}}
	for n := 1; n <= maxLen; n++ {
		var next [][]byte
		for _, p := range prev {
			for _, c := range alphabet {
				next = append(next, append(slices.Clip(p), c))
			}
		}
		out = append(out, next...)
		prev = next
	}
	return out
}

func encodeTuple(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = appendEscaped(b, p)
	}
	return b
}

func compareTuples(a, b [][]byte) int {
	for i := range a {
		if c := bytes.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func sign(c int) int { return max(-1, min(1, c)) }

func TestEscapeOrderExhaustive(t *testing.T) {
	all := allStrings(3)
	for _, a := range all {
		for _, b := range all {
			want := bytes.Compare(a, b)
			if got := bytes.Compare(appendEscaped(nil, a), appendEscaped(nil, b)); sign(got) != want {
				t.Fatalf("compare(esc(%x), esc(%x)) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestEscapeOrderTuples checks the property the snapshot relies on: the
// concatenated escapes of (key, namespace, map key) compare as the tuples do
// component-wise.
func TestEscapeOrderTuples(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		a := [][]byte{randomString(r, 3), randomString(r, 3), randomString(r, 3)}
		b := [][]byte{randomString(r, 3), randomString(r, 3), randomString(r, 3)}
		if r.IntN(4) == 0 {
			b[0] = a[0] // equal keys, so the later components decide
		}
		want := compareTuples(a, b)
		if got := bytes.Compare(encodeTuple(a...), encodeTuple(b...)); sign(got) != want {
			t.Fatalf("tuples %x and %x: encoded compare %d, want %d", a, b, got, want)
		}
	}
}

func TestEscapeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 10000; i++ {
		parts := [][]byte{randomString(r, 8), randomString(r, 8), randomString(r, 8)}
		enc := encodeTuple(parts...)
		rest := enc
		for j, want := range parts {
			var got []byte
			var err error
			got, rest, err = readEscaped(nil, rest)
			if err != nil {
				t.Fatalf("decode part %d of %x: %v", j, enc, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("part %d of %x: got %x, want %x", j, enc, got, want)
			}
		}
		if len(rest) != 0 {
			t.Fatalf("%x: %d bytes left", enc, len(rest))
		}
	}
}

func TestReadEscapedRejectsMalformed(t *testing.T) {
	for _, in := range [][]byte{
		nil,
		{0x61},             // no terminator
		{0x00},             // cut after the escape byte
		{0x61, 0x00, 0xFF}, // escaped zero, then nothing
		{0x00, 0x02},       // unknown escape
		{0x00, 0x00, 0x01}, // 0x00 0x00 is no escape
	} {
		if _, _, err := readEscaped(nil, in); err == nil {
			t.Errorf("readEscaped(%x) succeeded", in)
		}
	}
}

// FuzzReadEscaped feeds arbitrary bytes to the decoder: it must never panic,
// and what it accepts must re-encode to exactly the bytes it consumed.
func FuzzReadEscaped(f *testing.F) {
	f.Add([]byte{0x61, 0x00, 0x01})
	f.Add([]byte{0x00, 0xFF, 0x00, 0x01, 0x00, 0x01})
	f.Add([]byte{0x00, 0x02})
	f.Fuzz(func(t *testing.T, in []byte) {
		got, rest, err := readEscaped(nil, in)
		if err != nil {
			return
		}
		consumed := in[:len(in)-len(rest)]
		if re := appendEscaped(nil, got); !bytes.Equal(re, consumed) {
			t.Fatalf("decoded %x from %x, which re-encodes to %x", got, consumed, re)
		}
	})
}

func TestTimeOrder(t *testing.T) {
	ts := []int64{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 1 << 40, math.MaxInt64}
	for i := 1; i < len(ts); i++ {
		a, b := appendTime(nil, ts[i-1]), appendTime(nil, ts[i])
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("time %d encodes to %x, not below %d's %x", ts[i-1], a, ts[i], b)
		}
		if got := readTime(b); got != ts[i] {
			t.Errorf("readTime(appendTime(%d)) = %d", ts[i], got)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{[]byte{0x01, 0x02}, []byte{0x01, 0x03}},
		{[]byte{0x01, 0xFF}, []byte{0x02}},
		{[]byte{0xFF, 0xFF}, nil},
	} {
		if got := prefixEnd(c.in); !bytes.Equal(got, c.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", c.in, got, c.want)
		}
	}
	// Every key with the prefix lies below the end, and the prefix is left
	// untouched.
	p := []byte{0x00, 0x07, 0x61, 0x00, 0x01}
	end := prefixEnd(p)
	if !bytes.Equal(p, []byte{0x00, 0x07, 0x61, 0x00, 0x01}) {
		t.Fatalf("prefixEnd modified its input: %x", p)
	}
	if k := append(slices.Clone(p), 0xFF, 0xFF, 0xFF); bytes.Compare(k, end) >= 0 {
		t.Errorf("key %x with prefix %x is not below %x", k, p, end)
	}
}
