package storage

import "testing"

// rangeStart takes only a Content-Range that ends at the object's last byte
// of its known size; none is the whole object.
func TestRangeStart(t *testing.T) {
	for _, c := range []struct {
		header string
		size   int64
		start  int64
		ok     bool
	}{
		{"bytes 10-26/27", 27, 10, true},
		{"bytes 0-26/27", 27, 0, true},
		{"", 27, 0, true},
		{"bytes 10-25/27", 27, 0, false}, // not the tail
		{"bytes 10-26/28", 27, 0, false}, // another size
		{"bytes 27-26/27", 27, 0, false},
		{"bytes -5-26/27", 27, 0, false},
		{"bytes 10-26/*", 27, 0, false},
		{"items 10-26/27", 27, 0, false},
		{"bytes 10/27", 27, 0, false},
	} {
		start, ok := rangeStart(c.header, c.size)
		if ok != c.ok || ok && start != c.start {
			t.Errorf("rangeStart(%q, %d) = %d, %v, want %d, %v", c.header, c.size, start, ok, c.start, c.ok)
		}
	}
}
