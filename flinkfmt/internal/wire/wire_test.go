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

// TestSkipStringValue checks that skipping a string, and appending it to
// bytes, stop where reading it does and fail where reading it fails.
func TestSkipStringValue(t *testing.T) {
	for _, in := range [][]byte{
		{0x00, 7},                  // null
		{0x01, 7},                  // ""
		{0x04, 'a', 'b', 'c', 7},   // "abc"
		{0x03, 0xE9, 0x01, 'x', 7}, // "éx": a unit of two varint bytes
		{0x0B, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 0xE9, 0x01, 7}, // past the first eight bytes
		{0x0A, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 7},
		{0x03, 0xFF, 0xFF, 0x7F, 7}, // a unit past 0xFFFF
		{0x05, 'a', 'b'},            // shorter than its length
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
	} {
		read, skip, app := New(in, 0), New(in, 0), New(in, 0)
		s, ok := read.StringValue()
		skip.SkipStringValue()
		if read.Pos() != skip.Pos() || (read.Err() == nil) != (skip.Err() == nil) {
			t.Errorf("% x: read stops at %d (%v), skip at %d (%v)", in, read.Pos(), read.Err(), skip.Pos(), skip.Err())
		}
		if n, lok := StringValueLen(in); lok != (read.Err() == nil) || lok && n != read.Pos() {
			t.Errorf("% x: read stops at %d (%v), StringValueLen says %d, %v", in, read.Pos(), read.Err(), n, lok)
		}
		b, aok := app.AppendStringValue([]byte("pre"))
		if string(b) != "pre"+s || aok != ok || app.Pos() != read.Pos() || (read.Err() == nil) != (app.Err() == nil) {
			t.Errorf("% x: read gives %q, %v at %d; append gives %q, %v at %d (%v)", in, s, ok, read.Pos(), b, aok, app.Pos(), app.Err())
		}
	}
}

// Sized takes a length and its bytes; a negative length, or one past what
// remains, fails at the length's offset and leaves nothing read.
func TestSized(t *testing.T) {
	r := New([]byte{0, 0, 0, 2, 'a', 'b', 0, 0, 0, 0, 0, 0, 0, 3, 'c'}, 100)
	if got := r.Sized("key"); string(got) != "ab" {
		t.Fatalf("first: %q", got)
	}
	if got := r.Sized("value"); got == nil || len(got) != 0 {
		t.Fatalf("empty: %v", got)
	}
	if got := r.Sized("key"); got != nil {
		t.Fatalf("past the end: %q", got)
	}
	var we *Error
	if !errors.As(r.Err(), &we) || !errors.Is(we, ErrShort) || we.Offset != 110 || we.What != "key length" {
		t.Fatalf("past the end: %v", r.Err())
	}
	if got := r.Sized("value"); got != nil || r.Err() != we {
		t.Fatalf("after the error: %q, %v", got, r.Err())
	}
	for _, c := range []struct {
		in   []byte
		kind error
	}{
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 'x'}, ErrMalformed},
		{[]byte{0, 0, 1}, ErrShort},
		{[]byte{0, 0, 0, 1}, ErrShort},
	} {
		r := New(c.in, 7)
		if got := r.Sized("value"); got != nil || !errors.As(r.Err(), &we) || !errors.Is(we, c.kind) || we.Offset != 7 {
			t.Errorf("% x: %q, %v; want %v at offset 7", c.in, got, r.Err(), c.kind)
		}
	}
}

// FuzzStringValueLen: StringValueLen accepts what StringValue reads without
// an error, and only that, and ends where it does; skipping agrees.
func FuzzStringValueLen(f *testing.F) {
	for _, seed := range [][]byte{{0}, {1}, {4, 'a', 'b', 'c'}, {3, 0xE9, 0x01, 'x'}, {3, 0xFF, 0xFF, 0x7F}, {0x80, 0x80, 0x80, 0x80, 0x10}, {0xFF, 0xFF, 0xFF, 0xFF, 0x0F}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		read, skip := New(in, 0), New(in, 0)
		read.StringValue()
		skip.SkipStringValue()
		n, ok := StringValueLen(in)
		if ok != (read.Err() == nil) || ok && n != read.Pos() {
			t.Fatalf("% x: StringValue stops at %d (%v), StringValueLen says %d, %v", in, read.Pos(), read.Err(), n, ok)
		}
		if skip.Pos() != read.Pos() || (skip.Err() == nil) != (read.Err() == nil) {
			t.Fatalf("% x: StringValue stops at %d (%v), SkipStringValue at %d (%v)", in, read.Pos(), read.Err(), skip.Pos(), skip.Err())
		}
	})
}
