package avrobin

import (
	"errors"
	"strings"
	"testing"
)

func TestCursorVarints(t *testing.T) {
	for _, c := range []struct {
		in      []byte
		long    int64
		longErr string
		int     int32
		intErr  string
	}{
		{in: []byte{0x00}, long: 0, int: 0},
		{in: []byte{0x01}, long: -1, int: -1},
		{in: []byte{0x7f}, long: -64, int: -64},
		{in: []byte{0x80, 0x01}, long: 64, int: 64},
		// Not the shortest form, but the specification does not ask for it.
		{in: []byte{0x82, 0x80, 0x00}, long: 1, int: 1},
		{in: []byte{0xfe, 0xff, 0xff, 0xff, 0x0f}, long: 1<<31 - 1, int: 1<<31 - 1},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, long: -1 << 31, int: -1 << 31},
		{in: []byte{0xfe, 0xff, 0xff, 0xff, 0x1f}, long: 1<<32 - 1, intErr: "int overflows at byte 4"},
		{in: []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, long: 1<<63 - 1, intErr: "int overflows at byte 4"},
		{in: []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, longErr: "long overflows at byte 9", intErr: "int overflows at byte 4"},
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, longErr: "long overflows at byte 9", intErr: "int overflows at byte 4"},
		{in: []byte{0x80}, longErr: "long truncated at byte 1", intErr: "int truncated at byte 1"},
		{in: nil, longErr: "long truncated at byte 0", intErr: "int truncated at byte 0"},
	} {
		var cur Cursor
		cur.Reset(c.in)
		l, err := cur.Long("long")
		if c.longErr != "" {
			if err == nil || err.Error() != c.longErr {
				t.Errorf("Long(%x) = %d, %v; want error %q", c.in, l, err, c.longErr)
			}
		} else if err != nil || l != c.long || cur.End() != nil {
			t.Errorf("Long(%x) = %d, %v (end %v); want %d", c.in, l, err, cur.End(), c.long)
		}
		cur.Reset(c.in)
		i, err := cur.Int("int")
		if c.intErr != "" {
			if err == nil || err.Error() != c.intErr {
				t.Errorf("Int(%x) = %d, %v; want error %q", c.in, i, err, c.intErr)
			}
		} else if err != nil || i != c.int || cur.End() != nil {
			t.Errorf("Int(%x) = %d, %v; want %d", c.in, i, err, c.int)
		}
	}
}

func TestCursorLengths(t *testing.T) {
	var c Cursor
	c.Reset([]byte{0x06, 'a', 'b', 'c', 0x04, 0xff, 0xfe, 0x08, 'x'})
	if b, err := c.String("string"); err != nil || string(b) != "abc" {
		t.Fatalf("String = %q, %v", b, err)
	}
	if _, err := c.String("string"); err == nil || err.Error() != "string at byte 4 is not valid UTF-8" {
		t.Fatalf("String of ff fe: %v", err)
	}
	c.Reset([]byte{0x04, 0xff, 0xfe, 0x08, 'x'})
	if b, err := c.Bytes("bytes"); err != nil || string(b) != "\xff\xfe" || cap(b) != 2 {
		t.Fatalf("Bytes = %x (cap %d), %v", b, cap(b), err)
	}
	if _, err := c.Bytes("bytes"); err == nil || err.Error() != "bytes length 4 at byte 3 does not fit in the 1 bytes that remain" {
		t.Fatalf("Bytes past the end: %v", err)
	}
	c.Reset([]byte{0x03})
	if _, err := c.Bytes("bytes"); err == nil || !strings.Contains(err.Error(), "bytes length -2") {
		t.Fatalf("negative length: %v", err)
	}
	c.Reset([]byte{1, 2, 3})
	if _, err := c.Take(4, "fixed"); err == nil || err.Error() != "fixed of 4 bytes at byte 0 exceeds the 3 bytes that remain" {
		t.Fatalf("Take: %v", err)
	}
	if err := c.End(); err == nil || err.Error() != "3 trailing bytes after the datum" {
		t.Fatalf("End: %v", err)
	}
	c.Reset([]byte{0x01, 0x02})
	if v, err := c.Bool(); err != nil || !v {
		t.Fatalf("Bool = %v, %v", v, err)
	}
	if _, err := c.Bool(); err == nil || err.Error() != "boolean byte 0x02 at byte 1 is neither 0x00 nor 0x01" {
		t.Fatalf("Bool 02: %v", err)
	}
	c.Reset([]byte{0x04, 0x06})
	if i, err := c.Index(3, "union index"); err != nil || i != 2 {
		t.Fatalf("Index = %d, %v", i, err)
	}
	if _, err := c.Index(3, "union index"); err == nil || err.Error() != "union index 3 out of range [0, 3)" {
		t.Fatalf("Index 3: %v", err)
	}
}

func TestCursorBlocks(t *testing.T) {
	var c Cursor
	// Two items of at least 2 bytes need 4 bytes; 3 remain.
	c.Reset([]byte{0x04, 1, 2, 3})
	if _, _, err := c.Block(2); err == nil || err.Error() != "block of 2 items does not fit in the 3 bytes that remain" {
		t.Fatalf("Block: %v", err)
	}
	// The negative form: count -1, size 2.
	c.Reset([]byte{0x01, 0x04, 0x02, 0x04, 0x00})
	n, size, err := c.Block(1)
	if err != nil || n != 1 || size != 2 {
		t.Fatalf("Block = %d, %d, %v", n, size, err)
	}
	start := c.Pos()
	if _, err := c.Long("long"); err != nil {
		t.Fatal(err)
	}
	if err := c.EndBlock(size, start); err == nil || err.Error() != "block size 2 does not match its 1 bytes" {
		t.Fatalf("EndBlock: %v", err)
	}
	c.Reset([]byte{0x01, 0x01})
	if _, _, err := c.Block(1); err == nil || err.Error() != "negative block size -1" {
		t.Fatalf("negative size: %v", err)
	}
	c.Reset([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	if _, _, err := c.Block(1); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("MinInt64 count: %v", err)
	}
	// Items of no bytes: 65536 in all, over several blocks, then no more.
	c.Reset([]byte{0x80, 0x80, 0x06, 0x80, 0x80, 0x02, 0x02})
	for _, want := range []int{3 << 14, 1 << 14} {
		if n, _, err := c.Block(0); err != nil || n != want {
			t.Fatalf("Block(0) = %d, %v; want %d", n, err, want)
		}
	}
	if _, _, err := c.Block(0); err == nil || err.Error() != "more than 65536 array items that take no bytes" {
		t.Fatalf("zero-width bound: %v", err)
	}
	// Reset starts the count over.
	c.Reset([]byte{0x02})
	if _, _, err := c.Block(0); err != nil {
		t.Fatal(err)
	}
}

func TestCursorMapKeys(t *testing.T) {
	for _, n := range []int{2, 9, 40} {
		var in []byte
		for i := range n {
			in = append(in, 0x04, 'k', byte('0'+i%40))
		}
		var c Cursor
		c.Reset(append(in, 0x04, 'k', '1'))
		mark := c.MapKeys()
		for range n {
			if _, err := c.MapKey(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.CheckKeys(mark); err != nil {
			t.Fatalf("%d distinct keys: %v", n, err)
		}
		if _, err := c.MapKey(); err != nil {
			t.Fatal(err)
		}
		if err := c.CheckKeys(mark); err != nil {
			t.Fatalf("a key alone after CheckKeys: %v", err)
		}
		c.Reset(append(in, 0x04, 'k', '1'))
		mark = c.MapKeys()
		for range n + 1 {
			if _, err := c.MapKey(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.CheckKeys(mark); err == nil || err.Error() != `map key "k1" appears twice` {
			t.Fatalf("%d keys and k1 again: %v", n, err)
		}
	}
	// Keys of an outer map are kept while an inner one is checked.
	var c Cursor
	c.Reset([]byte{0x02, 'a', 0x02, 'a', 0x02, 'a'})
	outer := c.MapKeys()
	c.MapKey()
	inner := c.MapKeys()
	c.MapKey()
	if err := c.CheckKeys(inner); err != nil {
		t.Fatal(err)
	}
	c.MapKey()
	if err := c.CheckKeys(outer); err == nil {
		t.Fatal("the outer map's repeated key passed")
	}
}

func TestErrorsAreErrors(t *testing.T) {
	var c Cursor
	_, err := c.Long("long")
	var e *Error
	if !errors.As(err, &e) || e.Msg != "long truncated at byte 0" {
		t.Fatalf("%#v", err)
	}
	if err := CheckDepth(MaxDepth); err != nil {
		t.Fatal(err)
	}
	if err := CheckDepth(MaxDepth + 1); err == nil || err.Error() != "datum nests deeper than 1000 levels" {
		t.Fatal(err)
	}
}
