package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/examples/internal/jobrun"
	"github.com/stateproc/stateproc/examples/internal/jobruntest"
	"github.com/stateproc/stateproc/examples/sessionfeatures/sessions"
)

// With -input the job reads the generator's clicks from JSON-lines and
// CSV files, one file a split in event-time order, and writes every
// session the generator holds, as it does over the generated input.
func TestInputFilesThroughTheFileSource(t *testing.T) {
	src, err := sessions.NewSource(sessions.Config{Seed: 3, Users: 200, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	in := t.TempDir()
	for split := range src.Splits() {
		r, err := src.Open(context.Background(), split, 0)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		csv := split%2 == 1
		if csv {
			b.WriteString("ts,category,user_id\r\n")
		}
		for {
			c, _, ok, err := r.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if csv {
				fmt.Fprintf(&b, "%d,%s,%s\r\n", c.TS, c.Category, c.UserID)
			} else {
				fmt.Fprintf(&b, `{"user_id":%q,"category":%q,"ts":%d}`+"\n", c.UserID, c.Category, c.TS)
			}
		}
		name := fmt.Sprintf("clicks-%d.jsonl", split)
		if csv {
			name = fmt.Sprintf("clicks-%d.csv", split)
		}
		if err := os.WriteFile(filepath.Join(in, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	if code, _, errOut := runCommand(t, "-input", in, "-parallelism", "3", "-backend", "pebble", "-out", out); code != jobrun.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var want []string
	for _, s := range src.ExpectedSummaries() {
		b, err := sessions.FormatSummary(s, 0)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, string(b))
	}
	slices.Sort(want)
	if got := jobruntest.CommittedLines(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d session summaries, want the generator's %d", len(got), len(want))
	}

	if err := os.WriteFile(filepath.Join(in, "clicks-9.jsonl"), []byte(`{"user_id":"u-1","ts":"soon"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCommand(t, "-input", in, "-out", filepath.Join(t.TempDir(), "out"))
	if want := "clicks-9.jsonl at byte 0: json: cannot unmarshal string into Go struct field Click.ts of type int64"; code != jobrun.ExitFailure || !strings.Contains(errOut, want) {
		t.Fatalf("a malformed line: exit %d, stderr %q, want it to say %q", code, errOut, want)
	}
}
