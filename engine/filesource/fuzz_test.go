package filesource

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzSplitsReadEachLineOnce cuts any file at any split size: the splits
// together read every non-blank line once, in order, as a plain split of
// the file at its line breaks has them.
func FuzzSplitsReadEachLineOnce(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\nccc"), int64(1))
	f.Add([]byte("\n\n\r\nx\n"), int64(2))
	f.Add([]byte("one line without a break"), int64(7))
	f.Add([]byte("\r\r\n\n\r"), int64(3))
	f.Fuzz(func(t *testing.T, body []byte, size int64) {
		if size <= 0 || size > 1<<20 {
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f.jsonl"), body, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := New(dir, Options[string]{SplitBytes: size, Decode: func(line []byte) (string, error) { return string(line), nil }})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, l := range bytes.Split(body, []byte("\n")) {
			if l = bytes.TrimSuffix(l, []byte("\r")); len(l) > 0 {
				want = append(want, string(l))
			}
		}
		var got []string
		ctx := context.Background()
		for i := range s.Splits() {
			r, err := s.Open(ctx, i, 0)
			if err != nil {
				t.Fatal(err)
			}
			for {
				v, _, ok, err := r.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				got = append(got, v)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("split bytes %d: read %q, want %q", size, got, want)
		}
	})
}
