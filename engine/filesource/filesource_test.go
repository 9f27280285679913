package filesource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/engine"
)

type row struct {
	ID   int    `json:"id" csv:"id"`
	Name string `json:"name"`
	TS   int64  `json:"ts" csv:"ts"`
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readAll reads every split to its end; after every record of a split it
// also reopens the split at the reader's position and checks that the
// reopened reader returns the same next record.
func readAll[T any](t *testing.T, s *Source[T]) []T {
	t.Helper()
	ctx := context.Background()
	var all []T
	for i := range s.Splits() {
		r, err := s.Open(ctx, i, 0)
		if err != nil {
			t.Fatalf("split %d: %v", i, err)
		}
		for {
			v, _, ok, err := r.Next(ctx)
			if err != nil {
				t.Fatalf("split %d: %v", i, err)
			}
			if !ok {
				break
			}
			all = append(all, v)
			pos := r.(engine.PositionReader).Position()
			again, err := s.Open(ctx, i, pos)
			if err != nil {
				t.Fatalf("split %d reopened at %d: %v", i, pos, err)
			}
			w, _, wok, err := again.Next(ctx)
			if err != nil {
				t.Fatalf("split %d reopened at %d: %v", i, pos, err)
			}
			v2, _, ok2, err := r.Next(ctx)
			if err != nil || ok2 != wok || fmt.Sprint(v2) != fmt.Sprint(w) {
				t.Fatalf("split %d: after %d the reader reads %v %v %v, reopened there %v %v", i, pos, v2, ok2, err, w, wok)
			}
			if !ok2 {
				break
			}
			all = append(all, v2)
		}
	}
	return all
}

// Every cut of the files into splits, down to one byte a split, reads every
// record exactly once and in order: lines that straddle a split's start or
// end, CRLF line breaks, a last line without a line break, blank lines and
// empty files.
func TestEverySplitSizeReadsEachLineOnce(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"a.jsonl":  `{"id":1,"name":"a","ts":10}` + "\n" + `{"id":2,"name":"bb","ts":20}` + "\r\n\n" + `{"id":3,"name":"ccc","ts":30}` + "\n",
		"b.jsonl":  "",
		"c.jsonl":  `{"id":4,"name":"d","ts":40}` + "\r\n" + `{"id":5,"name":"","ts":50}`,
		"d.csv":    "ts,id,name\r\n60,6,\"f, \"\"quoted\"\"\"\r\n70,7,g\n\n80,8,h",
		"e.csv":    "id,ts,name\n",
		".hidden":  "not read",
		"_SUCCESS": "",
	})
	var want []string
	for i, name := range []string{"a", "bb", "ccc", "d", "", `f, "quoted"`, "g", "h"} {
		want = append(want, fmt.Sprint(row{ID: i + 1, Name: name, TS: int64(10 * (i + 1))}))
	}
	for size := int64(1); size <= 80; size++ {
		s, err := New(dir, Options[row]{SplitBytes: size, EventTime: func(r row) int64 { return r.TS }})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range readAll(t, s) {
			got = append(got, fmt.Sprint(r))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("split bytes %d:\n got %q\nwant %q", size, got, want)
		}
	}
}

func TestSplitsAndIdentities(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.jsonl": strings.Repeat("{}\n", 10), "b.jsonl": "", "c.jsonl": "{}"})
	s, err := New(dir, Options[row]{SplitBytes: 8})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range s.Splits() {
		id, _, _ := strings.Cut(s.SplitIdentity(i), ", crc32c")
		ids = append(ids, id)
	}
	want := []string{"a.jsonl bytes [0,8) of 30", "a.jsonl bytes [8,16) of 30", "a.jsonl bytes [16,24) of 30", "a.jsonl bytes [24,30) of 30", "c.jsonl bytes [0,2) of 2"}
	if !slices.Equal(ids, want) {
		t.Fatalf("splits %q, want %q", ids, want)
	}
}

func TestMalformedLineNamesFileAndOffset(t *testing.T) {
	good := `{"id":1,"ts":1}` + "\n"
	dir := writeFiles(t, map[string]string{
		"a.jsonl": good + good + `{"id":` + "\n" + good,
		"b.csv":   "id,ts\n1,2\n3,x\n4\n\"5,6\n7,8\n",
	})
	ctx := context.Background()
	// Fail by default.
	s, err := New(dir, Options[row]{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, ok, err := r.Next(ctx); !ok || err != nil {
			t.Fatalf("good line: %v %v", ok, err)
		}
	}
	_, _, ok, err := r.Next(ctx)
	var le *LineError
	if ok || !errors.As(err, &le) || le.Offset != int64(2*len(good)) || le.Path != filepath.Join(dir, "a.jsonl") {
		t.Fatalf("malformed line: ok %v, err %v", ok, err)
	}
	if want := fmt.Sprintf("a.jsonl at byte %d: unexpected end of JSON input", 2*len(good)); !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("error %q does not end with %q", err, want)
	}

	// Or skip and report.
	var bad []string
	s, err = New(dir, Options[row]{OnMalformed: func(e *LineError) {
		bad = append(bad, fmt.Sprintf("%s@%d: %v", filepath.Base(e.Path), e.Offset, e.Err))
	}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, v := range readAll(t, s) {
		ids = append(ids, v.ID)
	}
	if !slices.Equal(ids, []int{1, 1, 1, 1, 7}) {
		t.Fatalf("records %v", ids)
	}
	wantBad := []string{
		"a.jsonl@32: unexpected end of JSON input",
		`b.csv@10: column "ts": strconv.ParseInt: parsing "x": invalid syntax`,
		"b.csv@14: 1 fields, but the header has 2",
		"b.csv@16: column 1: unterminated quoted field",
	}
	// readAll reads lines again after reopening, so a skipped line may be
	// reported more than once, as after a restore.
	slices.Sort(bad)
	if bad = slices.Compact(bad); !slices.Equal(bad, wantBad) {
		t.Fatalf("malformed lines\n%q\nwant\n%q", bad, wantBad)
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		opts  Options[row]
		want  string
	}{
		{"unknown extension", map[string]string{"a.txt": "x\n"}, Options[row]{}, "a.txt: neither .csv nor .jsonl"},
		{"line too long", map[string]string{"a.jsonl": strings.Repeat(" ", 100) + "{}\n"}, Options[row]{MaxLineBytes: 64}, "a.jsonl at byte 0: line too long: more than 64 bytes"},
		{"a CSV column no field takes", map[string]string{"a.csv": "x\n1\n"}, Options[row]{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			s, err := New(dir, tc.opts)
			if err == nil {
				_, err = readAllErr(s)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := New(t.TempDir(), Options[int]{Format: CSV}); err != nil {
		t.Fatalf("no file, no CSV to decode: %v", err)
	}
	dir := writeFiles(t, map[string]string{"a.csv": "x\n1\n"})
	if _, err := New(dir, Options[int]{}); err == nil || !strings.Contains(err.Error(), "CSV into int needs Options.DecodeCSV") {
		t.Fatalf("CSV into an int: %v", err)
	}
}

func readAllErr[T any](s *Source[T]) (n int, err error) {
	ctx := context.Background()
	for i := range s.Splits() {
		r, err := s.Open(ctx, i, 0)
		if err != nil {
			return n, err
		}
		for {
			_, _, ok, err := r.Next(ctx)
			if err != nil {
				return n, err
			}
			if !ok {
				break
			}
			n++
		}
	}
	return n, nil
}

// A reader refuses a file that changed since the source listed it, and a
// restored offset that is not where a line begins.
func TestChangedFileAndBadOffset(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.jsonl": `{"id":1}` + "\n" + `{"id":2}` + "\n"})
	s, err := New(dir, Options[row]{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Open(ctx, 0, 3); err == nil || !strings.Contains(err.Error(), "restored offset 3 is not at the start of a line") {
		t.Fatalf("offset inside a line: %v", err)
	}
	if _, err := s.Open(ctx, 0, 99); err == nil || !strings.Contains(err.Error(), "restored offset 99 is outside split [0,18)") {
		t.Fatalf("offset past the end: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(`{"id":3}`+"\n"+`{"id":4}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, 0, 9); !errors.Is(err, ErrChanged) {
		t.Fatalf("same size, other bytes: %v", err)
	}
}
