package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestRatioOfTwoCommands(t *testing.T) {
	var out, errs bytes.Buffer
	// The command sleeps longer than the baseline and burns CPU, so its
	// wall and CPU time and the ratio show it.
	code := ratioMain([]string{"-n", "3", "-json", "--baseline", "true", "--",
		"sh", "-c", "sleep 0.05; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"}, &out, &errs)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if r.Runs != 3 || r.Baseline.Failed != 0 || r.Command.Failed != 0 {
		t.Errorf("runs %d, failures %d and %d, want 3, 0, 0", r.Runs, r.Baseline.Failed, r.Command.Failed)
	}
	if !slices.Equal(r.Baseline.Command, []string{"sh", "-c", "true"}) || r.Command.Command[0] != "sh" {
		t.Errorf("commands %q and %q", r.Baseline.Command, r.Command.Command)
	}
	for _, s := range []Side{r.Baseline, r.Command} {
		w := s.WallS
		if !(0 < w.Min && w.Min <= w.Median && w.Median <= w.Max) {
			t.Errorf("%q: wall %+v out of order", s.Command, w)
		}
		// A shell takes a few hundred KiB at the least, and a child
		// of this test no more than a few hundred MiB.
		if s.PeakRSSMiB < 0.1 || s.PeakRSSMiB > 1024 {
			t.Errorf("%q: peak RSS %.1f MiB", s.Command, s.PeakRSSMiB)
		}
	}
	if r.Command.WallS.Min < 0.05 {
		t.Errorf("command wall min %.3f s, shorter than its sleep", r.Command.WallS.Min)
	}
	if r.Command.CPUS.Median <= r.Baseline.CPUS.Median {
		t.Errorf("command CPU %.4f s not above the baseline's %.4f s", r.Command.CPUS.Median, r.Baseline.CPUS.Median)
	}
	if !(r.Ratio.Min > 1 && r.Ratio.Min <= r.Ratio.Median && r.Ratio.Median <= r.Ratio.Max) {
		t.Errorf("ratio %+v: the command is the slower one", r.Ratio)
	}
}

func TestRatioText(t *testing.T) {
	var out, errs bytes.Buffer
	if code := ratioMain([]string{"-n", "2", "--baseline", "true", "--", "true"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^baseline wall s +median +[0-9.]+ +min +[0-9.]+ +max +[0-9.]+ +cpu s median +[0-9.]+ +peak RSS MiB +[0-9.]+$`),
		regexp.MustCompile(`^command  wall s +median +[0-9.]+ .* peak RSS MiB +[0-9.]+$`),
		regexp.MustCompile(`^ratio command/baseline: median [0-9.]+ \(min [0-9.]+, max [0-9.]+\) over 2 pairs$`),
	}
	if len(lines) != len(want) {
		t.Fatalf("output %q: want %d lines", out.String(), len(want))
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}
}

func TestRatioFailingCommand(t *testing.T) {
	var out, errs bytes.Buffer
	code := ratioMain([]string{"-n", "2", "-json", "--baseline", "true", "--", "sh", "-c", "exit 3"}, &out, &errs)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Command.Failed != 2 || r.Baseline.Failed != 0 {
		t.Errorf("failures: command %d, baseline %d; want 2, 0", r.Command.Failed, r.Baseline.Failed)
	}
	if !strings.Contains(errs.String(), "failed in 2 of 2 runs") {
		t.Errorf("stderr %q does not say how often the command failed", errs.String())
	}
}

func TestRatioUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--", "true"},         // no baseline
		{"--baseline", "true"}, // no command
		{"-n", "0", "--baseline", "true", "--", "true"},
		{"--baseline", "true", "--", "/nonexistent/command"},
	} {
		var out, errs bytes.Buffer
		if code := ratioMain(args, &out, &errs); code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, errs.String())
		}
		if errs.Len() == 0 {
			t.Errorf("%q: nothing on stderr", args)
		}
	}
}
