package flinkfmt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Re-encoding the parsed _metadata of every reference savepoint gives its
// bytes back, for every fixture whose handles the writer supports; the
// others are refused by name, never written wrong.
func TestEncodeMetadataReproducesEveryFixture(t *testing.T) {
	root, rows := inventory(t)
	same := map[int]int{}
	refused := map[string]int{}
	for _, row := range rows {
		path := filepath.Join(root, row.dir, MetadataFile)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseMetadata(b)
		if err != nil {
			t.Errorf("%s: %v", row.dir, err)
			continue
		}
		got, err := EncodeMetadata(m)
		if errors.Is(err, ErrUnsupported) {
			refused[err.Error()[strings.LastIndex(err.Error(), ": ")+2:]]++
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", row.dir, err)
			continue
		}
		if !bytes.Equal(got, b) {
			i := 0
			for i < len(got) && i < len(b) && got[i] == b[i] {
				i++
			}
			t.Errorf("%s: re-encoded metadata differs from byte %d (%d bytes, want %d)", row.dir, i, len(got), len(b))
			continue
		}
		same[m.Version]++
	}
	var vs []string
	total := 0
	for v, n := range same {
		vs = append(vs, fmt.Sprintf("version %d: %d", v, n))
		total += n
	}
	sort.Strings(vs)
	t.Logf("%d of %d fixtures re-encode byte for byte (%s); refused: %v", total, len(rows), strings.Join(vs, ", "), refused)
	// The changelog fixtures are the only ones whose handles the writer
	// does not take.
	if n := len(rows) - total; n != 5 || len(refused) != 1 {
		t.Errorf("%d fixtures not reproduced, want the 5 of the changelog backend: %v", n, refused)
	}
}

func TestAppendUTF(t *testing.T) {
	for _, c := range []struct {
		s    string
		want []byte
	}{
		{"", []byte{0, 0}},
		{"uid", []byte{0, 3, 'u', 'i', 'd'}},
		{"a\x00b", []byte{0, 4, 'a', 0xC0, 0x80, 'b'}},
		{"é", []byte{0, 2, 0xC3, 0xA9}},
		{"€", []byte{0, 3, 0xE2, 0x82, 0xAC}},
		// Above U+FFFF: the two surrogates, three bytes each.
		{"😀", []byte{0, 6, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80}},
	} {
		got, err := appendUTF(nil, c.s)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%q: % x, %v; want % x", c.s, got, err, c.want)
		}
	}
	if _, err := appendUTF(nil, strings.Repeat("é", 1<<15)); err == nil {
		t.Error("a string of 65536 bytes was encoded")
	}
}

// FuzzEncodeMetadata encodes whatever parses: the encoding must parse
// again into metadata that encodes to the same bytes, so the writer keeps
// everything the reader keeps, whatever the input.
func FuzzEncodeMetadata(f *testing.F) {
	seedMetadata(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMetadata(b)
		if err != nil {
			return
		}
		e, err := EncodeMetadata(m)
		if err != nil {
			if !errors.Is(err, ErrUnsupported) && !strings.Contains(err.Error(), "checkpoint properties") && !strings.Contains(err.Error(), "65535") {
				t.Fatalf("parsed metadata does not encode: %v", err)
			}
			return
		}
		again, err := ParseMetadata(e)
		if err != nil {
			t.Fatalf("encoded metadata does not parse: %v", err)
		}
		e2, err := EncodeMetadata(again)
		if err != nil || !bytes.Equal(e, e2) {
			t.Fatalf("encoding is not stable: %v", err)
		}
	})
}
