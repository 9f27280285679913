package wire

import (
	"errors"
	"testing"
)

func TestModifiedUTF8(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{[]byte("plain"), "plain"},
		{[]byte{0xC0, 0x80}, "\x00"},   // NUL is two bytes
		{[]byte{0xC3, 0xA9}, "\u00e9"}, // é
		// U+1F600 as two three-byte surrogates (CESU-8).
		{[]byte{0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80}, "\U0001F600"},
	} {
		if got, err := DecodeModifiedUTF8(c.in); err != nil || got != c.want {
			t.Errorf("% x: %q, %v", c.in, got, err)
		}
	}
	for _, bad := range [][]byte{{0x00}, {0xC3}, {0xE0, 0x80}, {0xF0, 0x9F, 0x98, 0x80}} {
		if _, err := DecodeModifiedUTF8(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("% x: %v", bad, err)
		}
	}
}

func TestCountsAndStickyErrors(t *testing.T) {
	r := New([]byte{0, 0, 0, 3, 1, 2}, 100)
	if n := r.Count("items", 1); n != 0 || !errors.Is(r.Err(), ErrShort) {
		t.Errorf("a count past the end: %d, %v", n, r.Err())
	}
	var e *Error
	if !errors.As(r.Err(), &e) || e.Offset != 100 {
		t.Errorf("the error names offset %v", r.Err())
	}
	if r.I32() != 0 || r.U8() != 0 {
		t.Error("reads after an error return zero")
	}
	r = New([]byte{0xFF, 0xFF, 0xFF, 0xFF}, 0)
	if r.Count("items", 0); !errors.Is(r.Err(), ErrMalformed) {
		t.Errorf("a negative count: %v", r.Err())
	}
	// A StringValue length of six varint bytes is refused.
	r = New([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 0)
	if _, ok := r.StringValue(); ok || r.Err() == nil {
		t.Error("an over-long varint was accepted")
	}
}
