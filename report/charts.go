package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/sizing"
)

// The charts' colors, those of the page's stylesheet.
var (
	colorBar      = color.RGBA{R: 0x3b, G: 0x6e, B: 0xa8, A: 0xff}
	colorAlarm    = color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff}
	colorMuted    = color.RGBA{R: 0x8a, G: 0x94, B: 0x9e, A: 0xff}
	colorBoundary = color.RGBA{R: 0xe6, G: 0x7e, B: 0x22, A: 0xff}
	colorSecond   = color.RGBA{R: 0x27, G: 0xae, B: 0x60, A: 0xff}
)

// The size of a chart, and the most bars a skew chart draws: more key
// groups are summed into as many bars.
const (
	chartWidth  = 5.6 * vg.Inch
	chartHeight = 2.2 * vg.Inch
	maxSkewBars = 512
)

// sans is the typeface of every chart: Liberation Sans, which
// gonum.org/v1/plot carries for measuring text and which the page names
// (a browser without it draws a similar sans-serif face).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func newPlot(x, y string) *plot.Plot {
	p := plot.New()
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sans, 10)
		ax.Tick.Label.Font = font.From(sans, 8.5)
	}
	p.Legend.TextStyle.Font = font.From(sans, 9)
	p.Legend.Top = true
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.Y.Min = 0
	p.Y.Tick.Marker = countTicks{}
	return p
}

// render draws p as SVG, without the XML prologue, for inlining in HTML.
func render(p *plot.Plot) ([]byte, error) {
	c := vgsvg.New(chartWidth, chartHeight)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("report: drawing a chart: %w", err)
	}
	out := b.Bytes()
	if i := bytes.Index(out, []byte("<svg")); i >= 0 {
		out = out[i:]
	}
	return out, nil
}

// countTicks labels an axis of counts or bytes with round numbers in SI
// units: 0, 2.5k, 5k.
type countTicks struct{}

func (countTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = si(ticks[i].Value)
		}
	}
	return ticks
}

// si writes v with an SI prefix and at most three significant digits.
func si(v float64) string {
	for _, u := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.f {
			return strconv.FormatFloat(v/u.f, 'g', 3, 64) + u.s
		}
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// skewChart draws the bytes of every key group, with a line where each
// subtask's key groups start at the savepoint's parallelism and the mean.
func skewChart(s *StateCharts) ([]byte, error) {
	p := newPlot("key group", "bytes")
	per := max(1, (s.MaxParallelism+maxSkewBars-1)/maxSkewBars)
	h := &plotter.Histogram{FillColor: colorBar, Width: float64(per)}
	var total float64
	for kg := 0; kg < s.MaxParallelism; kg += per {
		var sum float64
		for k := kg; k < min(kg+per, s.MaxParallelism); k++ {
			sum += float64(s.KeyGroupBytes[k])
		}
		total += sum
		h.Bins = append(h.Bins, plotter.HistogramBin{Min: float64(kg), Max: float64(min(kg+per, s.MaxParallelism)), Weight: sum})
	}
	p.Add(h)
	if per > 1 {
		p.Y.Label.Text = fmt.Sprintf("bytes per %d key groups", per)
	}
	top := 0.0
	for _, b := range h.Bins {
		top = math.Max(top, b.Weight)
	}
	top = math.Max(top, 1)
	for i := 1; i < s.Parallelism; i++ {
		x := float64(keygroup.ForSubtask(i, s.Parallelism, s.MaxParallelism).Start)
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top * 1.05}})
		if err != nil {
			return nil, err
		}
		l.Color, l.Width, l.Dashes = colorBoundary, vg.Points(1.2), []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(l)
		if i == 1 {
			p.Legend.Add("subtask boundary", l)
		}
	}
	if n := len(h.Bins); n > 0 && total > 0 {
		mean := total / float64(n)
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: mean}, {X: float64(s.MaxParallelism), Y: mean}})
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = colorMuted, vg.Points(0.8)
		p.Add(l)
		p.Legend.Add("mean", l)
	}
	p.X.Min, p.X.Max = 0, float64(s.MaxParallelism)
	p.Y.Max = top * 1.08
	return render(p)
}

// barChart draws one bar per label; alarm says which bars to draw in the
// alarm color.
func barChart(x, y string, labels []string, counts []float64, alarm func(int) bool) ([]byte, error) {
	p := newPlot(x, y)
	vals := make(plotter.Values, len(counts))
	copy(vals, counts)
	width := vg.Length(math.Min(28, float64(chartWidth)*0.7/float64(max(1, len(counts)))))
	normal, alarmed := make(plotter.Values, len(counts)), make(plotter.Values, len(counts))
	for i, c := range counts {
		if alarm != nil && alarm(i) {
			alarmed[i] = c
		} else {
			normal[i] = c
		}
	}
	for _, s := range []struct {
		v plotter.Values
		c color.Color
	}{{normal, colorBar}, {alarmed, colorAlarm}} {
		b, err := plotter.NewBarChart(s.v, width)
		if err != nil {
			return nil, err
		}
		b.Color, b.LineStyle.Width = s.c, 0
		p.Add(b)
	}
	p.NominalX(labels...)
	p.X.Tick.Label.Font = font.From(sans, 7.5)
	top := 1.0
	for _, c := range counts {
		top = math.Max(top, c)
	}
	p.Y.Max = top * 1.08
	return render(p)
}

// sizeLabel names a bin of sizes in bytes.
func sizeLabel(b Bin) string {
	if b.Lo == b.Hi {
		return bytesLabel(b.Lo)
	}
	return bytesLabel(b.Lo) + "–" + bytesLabel(b.Hi)
}

// countLabel names a bin of counts.
func countLabel(b Bin) string {
	if b.Lo == b.Hi {
		return strconv.FormatInt(b.Lo, 10)
	}
	return si(float64(b.Lo)) + "–" + si(float64(b.Hi))
}

func bytesLabel(n int64) string {
	for _, u := range []struct {
		f int64
		s string
	}{{1 << 30, "Gi"}, {1 << 20, "Mi"}, {1 << 10, "Ki"}} {
		if n >= u.f {
			return strconv.FormatFloat(float64(n)/float64(u.f), 'g', 3, 64) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// growthChart draws a state's keys and entries over the savepoints' times;
// a state that grows without bound is drawn in the alarm color.
func growthChart(g *Growth) ([]byte, error) {
	p := newPlot("savepoint, oldest first (# as in the table of savepoints)", "count")
	var ticks []plot.Tick
	var entries, keys plotter.XYs
	for i, pt := range g.Points {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: "#" + strconv.Itoa(i)})
		if !pt.Present {
			continue
		}
		x := float64(i)
		entries = append(entries, plotter.XY{X: x, Y: float64(pt.Entries)})
		keys = append(keys, plotter.XY{X: x, Y: float64(pt.Keys)})
	}
	if allZero(entries) {
		return nil, nil
	}
	c := colorBar
	if g.Unbounded {
		c = colorAlarm
	}
	add := func(xys plotter.XYs, c color.Color, name string, dashed bool) error {
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		l.Color, l.Width = c, vg.Points(1.6)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		s.Color, s.Shape = c, draw.CircleGlyph{}
		p.Add(l, s)
		p.Legend.Add(name, l, s)
		return nil
	}
	if err := add(entries, c, "entries", false); err != nil {
		return nil, err
	}
	if g.Kind != "timers" && !sameY(entries, keys) {
		if err := add(keys, colorSecond, "keys", true); err != nil {
			return nil, err
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Legend.Top, p.Legend.Left = true, true
	top := 1.0
	for _, e := range entries {
		top = math.Max(top, e.Y)
	}
	// Room above the lines for the legend.
	p.Y.Max = top * 1.3
	p.X.Min, p.X.Max = -0.2, float64(len(g.Points)-1)+0.2
	return render(p)
}

func allZero(xys plotter.XYs) bool {
	for _, p := range xys {
		if p.Y != 0 {
			return false
		}
	}
	return true
}

func sameY(a, b plotter.XYs) bool {
	for i := range a {
		if a[i].Y != b[i].Y {
			return false
		}
	}
	return true
}

// sizingChart draws, per task slot, the live heap on the heap backend (its
// upper estimate), the bytes on disk on Pebble and a full checkpoint.
func sizingChart(rep *sizing.Report) ([]byte, error) {
	if len(rep.Slots) == 0 {
		return nil, nil
	}
	p := newPlot("task slot", "bytes")
	var heap, pebble, full plotter.Values
	var labels []string
	top := 1.0
	for _, s := range rep.Slots {
		heap = append(heap, s.Heap.High)
		pebble = append(pebble, s.Pebble)
		full = append(full, s.Savepoint)
		labels = append(labels, "slot "+strconv.Itoa(s.Slot))
		top = math.Max(top, math.Max(s.Heap.High, math.Max(s.Pebble, s.Savepoint)))
	}
	w := vg.Length(math.Min(30, float64(chartWidth)*0.25/float64(len(rep.Slots))))
	for i, s := range []struct {
		v    plotter.Values
		c    color.Color
		name string
	}{{heap, colorBar, "heap backend (live heap)"}, {pebble, colorSecond, "Pebble (on disk)"}, {full, colorMuted, "full checkpoint"}} {
		b, err := plotter.NewBarChart(s.v, w)
		if err != nil {
			return nil, err
		}
		b.Color, b.LineStyle.Width, b.Offset = s.c, 0, vg.Length(i-1)*w
		p.Add(b)
		p.Legend.Add(s.name, b)
	}
	p.NominalX(labels...)
	p.Y.Max = top * 1.3
	return render(p)
}
