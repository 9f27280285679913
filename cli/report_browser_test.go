package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway/gatewaytest"
)

// -screenshot also writes the top of the page, as a small PNG, where the
// README shows it: go test ./cli -run TestReportInBrowser -screenshot ../docs/report.png
var screenshot = flag.String("screenshot", "", "write the README's screenshot of the report to this PNG file")

// chromium finds the browser: STATEPROC_CHROMIUM, or chromium on the path
// (Debian's package, which .ci/run installs). Without it the test skips,
// except in CI, where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STATEPROC_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium on the path: .ci/run installs Debian's chromium package")
	}
	t.Skip("no Chromium on the path (apt-get install chromium, or set STATEPROC_CHROMIUM): the browser test skips")
	return ""
}

// runStateproc runs the command in process and returns its standard output.
func runStateproc(t *testing.T, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("stateproc %s: exit %d: %s", strings.Join(args, " "), code, stderr.Bytes())
	}
	return stdout.Bytes()
}

// pageFacts is what the page shows, read from its DOM by pageScript.
type pageFacts struct {
	Charts []struct {
		Chart, Operator, State string
		Width, Height          float64
		// Marks are the shapes in data colors, Alarms those in the alarm
		// color, Boundaries the subtask boundaries with their legend.
		Marks, Alarms, Boundaries int
		// Texts are the chart's words: axis labels, tick labels, legend.
		Texts []string
	}
	States, Timers, OperatorStates, Growth, TopEntries, TopBytes, Details []struct {
		Operator, State, Unbounded string
		Figures                    map[string]struct{ Value, Text string }
	}
}

// pageScript gathers every chart with its size and its data marks (the
// filled or stroked shapes in the charts' data colors) and every figure
// with its exact value and its text.
const pageScript = `(() => {
  const data = /(fill|stroke):#(3B6EA8|C0392B|27AE60)/i;
  // A mark is drawn: a filled shape with an area, or a stroked line with a
  // length; bars of nothing are degenerate.
  const drawn = p => { const b = p.getBBox(), st = p.getAttribute('style') || '';
    return /fill:#(?!FFFFFF)/i.test(st) ? b.width > 0 && b.height > 0 : p.getTotalLength() > 0; };
  const count = (svg, re) => svg ? [...svg.querySelectorAll('path')].filter(p => re.test(p.getAttribute('style') || '') && drawn(p)).length : 0;
  const charts = [...document.querySelectorAll('figure.chart')].map(f => {
    const svg = f.querySelector('svg');
    const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    const at = f.closest('[data-operator]') || f;
    return {chart: f.dataset.chart || '', operator: f.dataset.operator || at.dataset.operator || '', state: f.dataset.state || at.dataset.state || '',
      width: r.width, height: r.height,
      marks: count(svg, data), alarms: count(svg, /fill:#C0392B/i), boundaries: count(svg, /stroke:#E67E22/i),
      texts: svg ? [...svg.querySelectorAll('text')].map(t => t.textContent) : []};
  });
  const rows = sel => [...document.querySelectorAll(sel)].map(e => ({operator: e.dataset.operator || '', state: e.dataset.state || '', unbounded: e.dataset.unbounded || '',
    figures: Object.fromEntries([...e.querySelectorAll('[data-figure]')].map(c => [c.dataset.figure, {value: c.dataset.value, text: c.textContent.trim()}]))}));
  return {charts, states: rows('#state-table tr[data-operator]'), timers: rows('#timer-table tr[data-operator]'),
    operatorStates: rows('#operator-state-table tr[data-operator]'), growth: rows('#growth-table tr[data-operator]'),
    topEntries: rows('#top-by-entries tr[data-operator]'), topBytes: rows('#top-by-bytes tr[data-operator]'),
    details: rows('#details article')};
})()`

// The report of GatewayMeter's leak variant at four increasing source
// positions, given out of order, loads in headless Chromium without a
// console message or a request beyond the file itself; every chart is
// there and draws data; every figure equals inspect --scan -o json of the
// newest savepoint; the growth flags `open` and not `usd_total`; and a
// screenshot is written to the test's directory.
func TestReportInBrowser(t *testing.T) {
	browser := chromium(t)
	checkedIn, err := filepath.Abs(filepath.Join("..", "testdata", "savepoints", "v2"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The page names the savepoints as they are given: short names read
	// better in the README's screenshot.
	t.Chdir(dir)
	cfg := gateway.Config{Seed: 3, Events: 40000, Parallelism: 2, MaxParallelism: 128, Leak: true}
	var sps []string
	for _, n := range []int64{8000, 16000, 24000, 32000} {
		sp := fmt.Sprintf("leak-%d", n)
		gatewaytest.Run(t, cfg, gateway.Sinks{}, engine.RunOptions{Backend: engine.Pebble, StopAfter: n, SavepointDir: sp})
		sps = append(sps, sp)
	}
	page := filepath.Join(dir, "report.html")
	var summary struct {
		Charts     int
		Savepoints []struct{ Path string }
		Growth     []struct {
			Operator, State string
			Unbounded       bool
		}
	}
	out := runStateproc(t, "report", sps[2], sps[0], sps[3], sps[1], "--out", page, "-o", "json")
	if err := json.Unmarshal(out, &summary); err != nil {
		t.Fatal(err)
	}
	for i, s := range summary.Savepoints {
		if s.Path != sps[i] {
			t.Fatalf("savepoint %d of the report is %s, want %s: they are sorted oldest first", i, s.Path, sps[i])
		}
	}
	var want inspectJSON
	if err := json.Unmarshal(runStateproc(t, "inspect", "--scan", "--top", "10", "-o", "json", sps[3]), &want); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, browser, dir)
	facts, full, top := b.load(t, page)
	if err := os.WriteFile(filepath.Join(dir, "report.png"), full, 0o644); err != nil {
		t.Fatal(err)
	}
	if *screenshot != "" {
		writeSmallPNG(t, top, *screenshot)
	}
	checkCharts(t, facts, want, summary.Charts, true)
	checkFigures(t, facts, want)
	flagged := map[string]string{}
	for _, g := range facts.Growth {
		flagged[g.Operator+"/"+g.State] = g.Unbounded
	}
	if flagged["assemble/open"] != "true" || flagged["tenant-cost/usd_total"] != "false" {
		t.Errorf("growth without bound: %v, want assemble/open and not tenant-cost/usd_total", flagged)
	}
	for _, g := range summary.Growth {
		if g.Unbounded != (g.Operator+"/"+g.State == "assemble/open") {
			t.Errorf("the summary says %s/%s unbounded: %v", g.Operator, g.State, g.Unbounded)
		}
	}
	t.Logf("%d charts; screenshot %s (%d bytes)", len(facts.Charts), filepath.Join(dir, "report.png"), len(full))

	// The checked-in leak savepoint alone: no growth, and every open entry
	// is past its TTL, drawn in the alarm color. The sessions savepoint at
	// parallelism 3 over 720 key groups marks two subtask boundaries.
	for _, name := range []string{"gateway-leak-p1-pebble", "sessions-p3-pebble-maxp720"} {
		sp := filepath.Join(checkedIn, name)
		page := filepath.Join(dir, name+".html")
		var sum struct{ Charts int }
		if err := json.Unmarshal(runStateproc(t, "report", sp, "--out", page, "-o", "json"), &sum); err != nil {
			t.Fatal(err)
		}
		var want inspectJSON
		if err := json.Unmarshal(runStateproc(t, "inspect", "--scan", "--top", "10", "-o", "json", sp), &want); err != nil {
			t.Fatal(err)
		}
		facts, full, _ := b.load(t, page)
		if err := os.WriteFile(filepath.Join(dir, name+".png"), full, 0o644); err != nil {
			t.Fatal(err)
		}
		checkCharts(t, facts, want, sum.Charts, false)
		checkFigures(t, facts, want)
		for _, c := range facts.Charts {
			switch {
			case name == "gateway-leak-p1-pebble" && c.Chart == "ttl-ages" && c.State == "open":
				if c.Alarms == 0 || c.Alarms != c.Marks {
					t.Errorf("%s: the TTL ages of open draw %d of %d bars past the TTL", name, c.Alarms, c.Marks)
				}
			case name == "sessions-p3-pebble-maxp720" && c.Chart == "skew":
				if c.Boundaries != 3 {
					t.Errorf("%s: %s/%s marks %d subtask boundaries with the legend, want 2 and 1", name, c.Operator, c.State, c.Boundaries)
				}
			}
		}
	}
}

// browser is headless Chromium driven through chromedp, with what its
// pages logged and requested.
type browser struct {
	ctx                context.Context
	mu                 sync.Mutex
	problems, requests []string
}

// newBrowser starts Chromium with the flags of an isolated test run and a
// fresh profile, and stops it when the test ends.
func newBrowser(t *testing.T, path, dir string) *browser {
	t.Helper()
	ctx, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "chromium-profile")), chromedp.WindowSize(1280, 1100))
	t.Cleanup(cancel)
	ctx, cancel = chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancel)
	b := &browser{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			b.problems = append(b.problems, fmt.Sprintf("console.%s: %v", e.Type, e.Args))
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+e.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning {
				b.problems = append(b.problems, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, enable := range []func() error{
		func() error { _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); return err },
		func() error { _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); return err },
		func() error { _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); return err },
	} {
		if err := enable(); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// load opens page and returns what its DOM shows, a screenshot of the
// whole page and one of its top; it fails the test if the page logged
// anything or requested anything but itself.
func (b *browser) load(t *testing.T, page string) (pageFacts, []byte, []byte) {
	t.Helper()
	b.mu.Lock()
	b.problems, b.requests = nil, nil
	b.mu.Unlock()
	url := "file://" + page
	if err := chromedp.Do(b.ctx, chromedp.Navigate(url), chromedp.WaitReady("figure.chart svg")); err != nil {
		t.Fatal(err)
	}
	facts, err := chromedp.Run(b.ctx, chromedp.Evaluate[pageFacts](pageScript))
	if err != nil {
		t.Fatal(err)
	}
	full, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	top, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	// Events may trail the page's last action by a moment.
	if err := chromedp.Do(b.ctx, chromedp.Sleep(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		t.Errorf("%s logged: %q", page, b.problems)
	}
	if len(b.requests) == 0 {
		t.Errorf("%s: no request seen: the network domain reports nothing", page)
	}
	for _, u := range b.requests {
		if u != url {
			t.Errorf("%s requested %s: it must load nothing", page, u)
		}
	}
	return facts, full, top
}

// inspectJSON is what the browser test reads of inspect -o json.
type inspectJSON struct {
	States []struct {
		Operator, Name string
		Keys, Entries  uint64
		Bytes          uint64
		BytesPerEntry  float64 `json:"bytes_per_entry"`
		Skew           float64
		TTL            *struct{}                    `json:"ttl"`
		ValueSize      *struct{ P50, P99, Max int } `json:"value_size"`
		Ages           *struct{ Expired uint64 }    `json:"ttl_ages"`
	}
	Timers []struct {
		Operator, Name string
		Timers, Bytes  uint64
		MaxPerKey      *uint64 `json:"max_per_key"`
	}
	OperatorStates []struct {
		Operator, Name string
		Entries, Bytes uint64
	} `json:"operator_states"`
	TopKeys struct {
		ByEntries []topKeyJSON `json:"by_entries"`
		ByBytes   []topKeyJSON `json:"by_bytes"`
	} `json:"top_keys"`
}

type topKeyJSON struct {
	Operator, State string
	Entries, Bytes  uint64
}

// chartWords are the texts each kind of chart shows (axis labels and
// legends; a TTL chart's x label goes on with the time and the TTL),
// beside the y axis's zero.
var chartWords = map[string][]string{
	"skew":           {"key group", "bytes", "mean"},
	"value-sizes":    {"value size (bytes, without the TTL timestamp)", "values"},
	"timers-per-key": {"timers per key", "keys", "1"},
	"ttl-ages":       {"age at ", "entries", "0s–"},
	"growth":         {"savepoint, oldest first (# as in the table of savepoints)", "count", "entries", "#0", "#1"},
	"sizing":         {"task slot", "bytes", "slot 0", "heap backend (live heap)", "Pebble (on disk)", "full checkpoint"},
}

// checkCharts wants the charts that the newest savepoint's states call for,
// each drawn at a size and with data in it, plus one growth chart per state
// that is not empty in every savepoint and the sizing chart.
func checkCharts(t *testing.T, facts pageFacts, want inspectJSON, summarized int, growth bool) {
	t.Helper()
	expected := map[string]bool{"sizing": true}
	grows := func(id string) {
		if growth {
			expected["growth:"+id] = true
		}
	}
	for _, s := range want.States {
		if s.Entries == 0 {
			continue
		}
		id := s.Operator + "/" + s.Name
		expected["skew:"+id], expected["value-sizes:"+id] = true, true
		grows(id)
		if s.TTL != nil {
			expected["ttl-ages:"+id] = true
		}
	}
	for _, tm := range want.Timers {
		if tm.Timers == 0 {
			continue
		}
		id := tm.Operator + "/" + tm.Name
		expected["skew:"+id], expected["timers-per-key:"+id] = true, true
		grows(id)
	}
	got := map[string]bool{}
	for _, c := range facts.Charts {
		id := c.Chart
		if c.Operator != "" {
			id += ":" + c.Operator + "/" + c.State
		}
		if got[id] {
			t.Errorf("chart %s twice", id)
		}
		got[id] = true
		if c.Width < 300 || c.Height < 100 || c.Marks == 0 {
			t.Errorf("chart %s: %gx%g px with %d data marks", id, c.Width, c.Height, c.Marks)
		}
		for _, w := range append(chartWords[c.Chart], "0") {
			if !slices.ContainsFunc(c.Texts, func(s string) bool { return strings.HasPrefix(s, w) }) {
				t.Errorf("chart %s has no text %q: %q", id, w, c.Texts)
			}
		}
	}
	if !maps.Equal(got, expected) {
		t.Errorf("charts %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(expected)))
	}
	if summarized != len(facts.Charts) {
		t.Errorf("the summary counts %d charts, the page has %d", summarized, len(facts.Charts))
	}
}

// checkFigures holds every figure of the page against inspect's JSON: the
// exact value, and the text without its digit grouping for counts.
func checkFigures(t *testing.T, facts pageFacts, want inspectJSON) {
	t.Helper()
	type figures = map[string]struct{ Value, Text string }
	check := func(where string, got figures, name string, value any, count bool) {
		t.Helper()
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: no figure %s", where, name)
			return
		}
		var w string
		switch v := value.(type) {
		case uint64:
			w = strconv.FormatUint(v, 10)
		case int:
			w = strconv.Itoa(v)
		case float64:
			f, err := strconv.ParseFloat(g.Value, 64)
			if err != nil || f != v {
				t.Errorf("%s: %s is %q, inspect says %v", where, name, g.Value, v)
			}
			return
		}
		if g.Value != w {
			t.Errorf("%s: %s is %q, inspect says %s", where, name, g.Value, w)
		}
		if count && strings.ReplaceAll(g.Text, ",", "") != w {
			t.Errorf("%s: %s reads %q, inspect says %s", where, name, g.Text, w)
		}
	}
	rows := func(l []struct {
		Operator, State, Unbounded string
		Figures                    map[string]struct{ Value, Text string }
	}) map[string]figures {
		out := map[string]figures{}
		for _, r := range l {
			out[r.Operator+"/"+r.State] = r.Figures
		}
		return out
	}
	states, details := rows(facts.States), rows(facts.Details)
	if len(states) != len(want.States) {
		t.Errorf("%d states on the page, inspect has %d", len(states), len(want.States))
	}
	for _, s := range want.States {
		id := s.Operator + "/" + s.Name
		for _, got := range []figures{states[id], details[id]} {
			check(id, got, "keys", s.Keys, true)
			check(id, got, "entries", s.Entries, true)
			check(id, got, "bytes", s.Bytes, false)
			check(id, got, "bytes_per_entry", s.BytesPerEntry, false)
			check(id, got, "skew", s.Skew, false)
		}
		if s.Ages != nil {
			check(id, states[id], "ttl_ages.expired", s.Ages.Expired, true)
			check(id, details[id], "ttl_ages.expired", s.Ages.Expired, true)
		}
		if v := s.ValueSize; v != nil {
			check(id, details[id], "value_size.p50", v.P50, false)
			check(id, details[id], "value_size.p99", v.P99, false)
			check(id, details[id], "value_size.max", v.Max, false)
		}
	}
	timers := rows(facts.Timers)
	for _, tm := range want.Timers {
		id := tm.Operator + "/" + tm.Name
		for _, got := range []figures{timers[id], details[id]} {
			check(id, got, "timers", tm.Timers, true)
			check(id, got, "bytes", tm.Bytes, false)
			check(id, got, "max_per_key", *tm.MaxPerKey, true)
		}
	}
	ops := rows(facts.OperatorStates)
	for _, o := range want.OperatorStates {
		id := o.Operator + "/" + o.Name
		check(id, ops[id], "entries", o.Entries, true)
		check(id, ops[id], "bytes", o.Bytes, false)
	}
	for _, l := range []struct {
		what string
		page []struct {
			Operator, State, Unbounded string
			Figures                    map[string]struct{ Value, Text string }
		}
		want []topKeyJSON
	}{{"top by entries", facts.TopEntries, want.TopKeys.ByEntries}, {"top by bytes", facts.TopBytes, want.TopKeys.ByBytes}} {
		if len(l.page) != len(l.want) || len(l.want) == 0 {
			t.Errorf("%s: %d rows, inspect has %d", l.what, len(l.page), len(l.want))
			continue
		}
		for i, w := range l.want {
			where := fmt.Sprintf("%s #%d", l.what, i)
			if l.page[i].Operator != w.Operator || l.page[i].State != w.State {
				t.Errorf("%s: %s/%s, inspect says %s/%s", where, l.page[i].Operator, l.page[i].State, w.Operator, w.State)
			}
			check(where, l.page[i].Figures, "entries", w.Entries, true)
			check(where, l.page[i].Figures, "bytes", w.Bytes, false)
		}
	}
}

// writeSmallPNG writes a screenshot with its colors reduced to the 256
// most common, which keeps a page of flat colors and text small.
func writeSmallPNG(t *testing.T, shot []byte, path string) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	counts := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	common := slices.SortedFunc(maps.Keys(counts), func(a, b color.RGBA) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return int(a.R)<<16 + int(a.G)<<8 + int(a.B) - (int(b.R)<<16 + int(b.G)<<8 + int(b.B))
	})
	var pal color.Palette
	for _, c := range common[:min(256, len(common))] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(b, pal)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out.Set(x, y, img.At(x, y))
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
