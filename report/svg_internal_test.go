package report

import (
	"encoding/xml"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
)

// svgFacts is what a chart holds: its paths' styles and data, and its texts.
type svgFacts struct {
	Width  string `xml:"width,attr"`
	Height string `xml:"height,attr"`
	Paths  []struct {
		D     string `xml:"d,attr"`
		Style string `xml:"style,attr"`
	} `xml:"path"`
	Texts []string `xml:"text"`
}

func parseSVG(t *testing.T, b []byte) svgFacts {
	t.Helper()
	var f svgFacts
	if err := xml.Unmarshal(b, &f); err != nil {
		t.Fatalf("the chart is not well-formed XML: %v\n%s", err, b)
	}
	return f
}

// styled returns the paths whose style holds s.
func (f svgFacts) styled(s string) []string {
	var ds []string
	for _, p := range f.Paths {
		if strings.Contains(p.Style, s) {
			ds = append(ds, p.D)
		}
	}
	return ds
}

// A skew chart of 720 key groups at parallelism 3 draws one bar per key
// group that holds bytes (two key groups to a bar: 720 > 512 bars), the two
// subtask boundaries where subtasks 1 and 2 start, a mean line and a
// legend, and labels its axes.
func TestSkewChart(t *testing.T) {
	s := &StateCharts{Parallelism: 3, MaxParallelism: 720, KeyGroupBytes: make([]uint64, 720)}
	for _, kg := range []int{0, 1, 7, 300, 719} {
		s.KeyGroupBytes[kg] = uint64(100 * (kg + 1))
	}
	f := parseSVG(t, skewChart(s))
	if f.Width != strconv.Itoa(chartWidth) || f.Height != strconv.Itoa(chartHeight) {
		t.Errorf("size %sx%s", f.Width, f.Height)
	}
	// Key groups 0 and 1 share a bar.
	if bars := f.styled("fill:" + colorBar); len(bars) != 4 {
		t.Errorf("%d bars, want 4: %q", len(bars), bars)
	}
	boundaries := f.styled("stroke:" + colorBoundary)
	if len(boundaries) != 3 {
		t.Fatalf("%d boundary paths, want 2 and the legend's: %q", len(boundaries), boundaries)
	}
	// The mean line spans the x axis, from key group 0 to 720.
	mean := f.styled("stroke:" + colorMuted)
	if len(mean) != 2 {
		t.Fatalf("%d mean paths, want the line and the legend's: %q", len(mean), mean)
	}
	x0, x720 := pathX(t, mean[0], 0), pathX(t, mean[0], 1)
	for i, d := range boundaries[:2] {
		kg := float64(keygroup.ForSubtask(i+1, 3, 720).Start)
		if got, want := pathX(t, d, 0), x0+kg/720*(x720-x0); math.Abs(got-want) > 0.01 {
			t.Errorf("boundary %d at x %g, want %g (key group %g)", i+1, got, want, kg)
		}
	}
	for _, w := range []string{"key group", "bytes per 2 key groups", "subtask boundary", "mean", "0", "200", "400", "600"} {
		if !slices.Contains(f.Texts, w) {
			t.Errorf("no text %q in %q", w, f.Texts)
		}
	}
}

// A bar chart draws a bar per non-zero count, in the alarm color where
// asked, escapes its labels and rotates them when they do not fit.
func TestBarChart(t *testing.T) {
	labels := []string{"a<b", "b&c", "c"}
	f := parseSVG(t, barChart("x & y", "n", labels, []float64{3, 0, 5}, func(i int) bool { return i == 2 }))
	if n := len(f.styled("fill:" + colorBar)); n != 1 {
		t.Errorf("%d bars in the bar color, want 1", n)
	}
	if n := len(f.styled("fill:" + colorAlarm)); n != 1 {
		t.Errorf("%d bars in the alarm color, want 1", n)
	}
	for _, w := range append(labels, "x & y", "n", "0", "4") {
		if !slices.Contains(f.Texts, w) {
			t.Errorf("no text %q in %q", w, f.Texts)
		}
	}
	long := make([]string, 20)
	for i := range long {
		long[i] = "256Ki–512Ki"
	}
	b := barChart("size", "values", long, make([]float64, 20), nil)
	if got := strings.Count(string(b), `transform="rotate(-45`); got != 20 {
		t.Errorf("%d of 20 crowded labels rotated", got)
	}
}

// The tallest bar reaches the top of its axis's range and a bar of zero
// has no height.
func TestBarHeights(t *testing.T) {
	c := newChart(nominalAxis("", []string{"a", "b"}), countAxis("", 10))
	c.begin()
	c.bar(10, 20, 10, colorBar)
	c.bar(30, 40, 0, colorBar)
	f := parseSVG(t, c.finish())
	bars := f.styled("fill:" + colorBar)
	if len(bars) != 1 {
		t.Fatalf("%d bars: %q", len(bars), bars)
	}
	if want := "V" + px(c.top) + "H"; !strings.Contains(bars[0], want) {
		t.Errorf("the bar %q does not reach the top %s", bars[0], px(c.top))
	}
}

// Growth draws the entries as a line with a dot per savepoint present, and
// keys as a second series only where they differ.
func TestGrowthChart(t *testing.T) {
	g := &Growth{Kind: "value", Unbounded: true, Points: []Point{
		{Present: true, Keys: 1, Entries: 2}, {}, {Present: true, Keys: 3, Entries: 6}, {Present: true, Keys: 5, Entries: 9},
	}}
	f := parseSVG(t, growthChart(g))
	// The line and its legend, three dots and the legend's.
	if n := len(f.styled("stroke:" + colorAlarm)); n != 2 {
		t.Errorf("%d entries lines, want the line and the legend's", n)
	}
	if n := len(f.styled("fill:" + colorAlarm)); n != 4 {
		t.Errorf("%d entries dots, want 3 and the legend's", n)
	}
	if n := len(f.styled("fill:" + colorSecond)); n != 4 {
		t.Errorf("%d keys dots, want 3 and the legend's", n)
	}
	for _, w := range []string{"#0", "#1", "#2", "#3", "entries", "keys", "count"} {
		if !slices.Contains(f.Texts, w) {
			t.Errorf("no text %q in %q", w, f.Texts)
		}
	}
	if growthChart(&Growth{Points: []Point{{Present: true}}}) != nil {
		t.Error("a chart of nothing")
	}
}

// Ticks are round, cover the range and never step below one.
func TestLinearTicks(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		n        int
		want     []float64
	}{
		{0, 720, 6, []float64{0, 200, 400, 600}},
		{0, 1.08, 4, []float64{0, 1}},
		{0, 5400, 4, []float64{0, 2000, 4000}},
		{0, 81, 4, []float64{0, 25, 50, 75}},
		{0, 0, 4, []float64{0}},
	} {
		var got []float64
		for _, tk := range linearTicks(c.min, c.max, c.n, si) {
			got = append(got, tk.at)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("ticks of [%g, %g] by %d: %v, want %v", c.min, c.max, c.n, got, c.want)
		}
	}
}

// Coordinates carry at most two decimals, and no exponent.
func TestPx(t *testing.T) {
	re := regexp.MustCompile(`^-?\d+(\.\d{1,2})?$`)
	for _, v := range []float64{0, 1.005, 123.456789, -4.2, 1e-9, 538} {
		if s := px(v); !re.MatchString(s) || math.Abs(mustFloat(t, s)-v) > 0.005 {
			t.Errorf("px(%g) = %q", v, s)
		}
	}
}

// pathX is the x of a polyline's i-th point.
func pathX(t *testing.T, d string, i int) float64 {
	t.Helper()
	pts := strings.FieldsFunc(d, func(r rune) bool { return r == 'M' || r == 'L' })
	if i >= len(pts) {
		t.Fatalf("path %q has no point %d", d, i)
	}
	return mustFloat(t, strings.Fields(pts[i])[0])
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
