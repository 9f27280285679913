package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// The charts' colors, those of the page's stylesheet.
const (
	colorBar      = "#3B6EA8"
	colorAlarm    = "#C0392B"
	colorMuted    = "#8A949E"
	colorBoundary = "#E67E22"
	colorSecond   = "#27AE60"
	colorInk      = "#222222"
)

// The size of a chart in CSS pixels (5.6 by 2.2 inches), and the font
// sizes of its text.
const (
	chartWidth    = 538
	chartHeight   = 211
	fontLabel     = 13
	fontTick      = 11
	fontLegend    = 12
	fontNominal   = 10
	charWidthEm   = 0.56 // an upper estimate of a Liberation Sans glyph's advance
	tickLength    = 4
	legendSample  = 18
	legendLineGap = 4
)

// tick is a labelled position on an axis, in data units.
type tick struct {
	at    float64
	label string
}

// axis is one axis of a chart: its data range, its label and its ticks;
// a nominal axis names categories, one tick each.
type axis struct {
	min, max float64
	label    string
	ticks    []tick
	nominal  bool
}

// legendEntry is one line of a legend: its sample and its name.
type legendEntry struct {
	name  string
	color string
	kind  legendKind
	dash  string
}

type legendKind int

const (
	legendLine legendKind = iota
	legendBox
	legendLineDot
)

// svgChart draws one chart as SVG: a frame of two axes with ticks and
// labels around a plot area, data marks inside it and an optional legend.
// Data marks are paths styled with their color (fill for bars and dots,
// stroke for lines), which is what the browser test counts.
type svgChart struct {
	b              bytes.Buffer
	x, y           axis
	left, right    float64 // the plot area's edges, in pixels
	top, bottom    float64
	rotateNominal  bool
	legend         []legendEntry
	legendLeftSide bool
}

// newChart lays out a chart for the two axes: the margins leave room for
// the tick labels (rotated on x when nominal labels would overlap) and the
// axis labels.
func newChart(x, y axis) *svgChart {
	c := &svgChart{x: x, y: y}
	widest := 0.0
	for _, t := range y.ticks {
		widest = math.Max(widest, textWidth(t.label, fontTick))
	}
	c.left = 6 + fontLabel + 6 + widest + tickLength + 3
	c.right = chartWidth - 12
	c.top = 10
	xTickRoom := float64(fontTick) + 4
	if x.nominal && len(x.ticks) > 0 {
		slot := (c.right - c.left) / float64(len(x.ticks))
		longest := 0.0
		for _, t := range x.ticks {
			longest = math.Max(longest, textWidth(t.label, fontNominal))
		}
		if longest > slot-2 {
			c.rotateNominal = true
			xTickRoom = math.Min(longest, 70)*math.Sqrt2/2 + fontNominal
		}
	}
	c.bottom = chartHeight - 6 - fontLabel - 4 - xTickRoom - tickLength
	return c
}

// textWidth estimates the width of s drawn at size px.
func textWidth(s string, size float64) float64 {
	return float64(len([]rune(s))) * size * charWidthEm
}

// X and Y map data coordinates to pixels.
func (c *svgChart) X(v float64) float64 {
	if c.x.max == c.x.min {
		return c.left
	}
	return c.left + (v-c.x.min)/(c.x.max-c.x.min)*(c.right-c.left)
}

func (c *svgChart) Y(v float64) float64 {
	if c.y.max == c.y.min {
		return c.bottom
	}
	v = math.Max(c.y.min, math.Min(c.y.max, v))
	return c.bottom - (v-c.y.min)/(c.y.max-c.y.min)*(c.bottom-c.top)
}

// bar fills the rectangle from x0 to x1 (pixels) up to the value v; a bar
// of nothing is not drawn.
func (c *svgChart) bar(x0, x1, v float64, color string) {
	y := c.Y(v)
	if x1 <= x0 || y >= c.bottom {
		return
	}
	c.printf(`<path d="M%s %sH%sV%sH%sZ" style="fill:%s"/>`, px(x0), px(c.bottom), px(x1), px(y), px(x0), color)
}

// line strokes a polyline through the data points xs, ys.
func (c *svgChart) line(xs, ys []float64, color string, width float64, dash string) {
	if len(xs) < 2 {
		return
	}
	var d strings.Builder
	for i := range xs {
		if i == 0 {
			d.WriteByte('M')
		} else {
			d.WriteByte('L')
		}
		d.WriteString(px(c.X(xs[i])) + " " + px(c.Y(ys[i])))
	}
	c.printf(`<path d="%s" style="%s"/>`, d.String(), strokeStyle(color, width, dash))
}

// dots draws a filled circle at each data point.
func (c *svgChart) dots(xs, ys []float64, color string) {
	for i := range xs {
		c.dot(c.X(xs[i]), c.Y(ys[i]), color)
	}
}

func (c *svgChart) dot(x, y float64, color string) {
	const r = 3.2
	c.printf(`<path d="M%s %sa%s %s 0 1 0 %s 0a%s %s 0 1 0 %s 0Z" style="fill:%s"/>`,
		px(x-r), px(y), px(r), px(r), px(2*r), px(r), px(r), px(-2*r), color)
}

func strokeStyle(color string, width float64, dash string) string {
	s := "fill:none;stroke:" + color + ";stroke-width:" + px(width)
	if dash != "" {
		s += ";stroke-dasharray:" + dash
	}
	return s
}

// addLegend adds a line to the legend, drawn by finish.
func (c *svgChart) addLegend(e legendEntry) { c.legend = append(c.legend, e) }

// begin writes the SVG element and the frame: both axes with their
// ticks, tick labels and labels. Data marks follow, then finish.
func (c *svgChart) begin() {
	c.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Liberation Sans, Arial, Helvetica, sans-serif" fill="%s">`,
		chartWidth, chartHeight, chartWidth, chartHeight, colorInk)
	frame := strokeStyle(colorInk, 1, "")
	c.printf(`<path d="M%s %sH%s" style="%s"/>`, px(c.left), px(c.bottom), px(c.right), frame)
	c.printf(`<path d="M%s %sV%s" style="%s"/>`, px(c.left), px(c.bottom), px(c.top), frame)
	for _, t := range c.y.ticks {
		y := c.Y(t.at)
		c.printf(`<path d="M%s %sH%s" style="%s"/>`, px(c.left-tickLength), px(y), px(c.left), frame)
		c.text(c.left-tickLength-3, y+fontTick*0.35, fontTick, "end", "", t.label)
	}
	for _, t := range c.x.ticks {
		x := c.X(t.at)
		c.printf(`<path d="M%s %sV%s" style="%s"/>`, px(x), px(c.bottom), px(c.bottom+tickLength), frame)
		if c.rotateNominal {
			y := c.bottom + tickLength + 4
			c.text(x, y, fontNominal, "end", "rotate(-45 "+px(x)+" "+px(y)+")", t.label)
			continue
		}
		size := float64(fontTick)
		if c.x.nominal {
			size = fontNominal
		}
		c.text(x, c.bottom+tickLength+size, size, "middle", "", t.label)
	}
	c.text((c.left+c.right)/2, chartHeight-6, fontLabel, "middle", "", c.x.label)
	ly := (c.top + c.bottom) / 2
	c.text(6+fontLabel*0.8, ly, fontLabel, "middle", "rotate(-90 "+px(6+fontLabel*0.8)+" "+px(ly)+")", c.y.label)
}

// finish draws the legend in the plot area's top corner and returns the
// chart.
func (c *svgChart) finish() []byte {
	if len(c.legend) > 0 {
		width := 0.0
		for _, e := range c.legend {
			width = math.Max(width, textWidth(e.name, fontLegend))
		}
		x := c.right - 6 - width - legendSample - 6
		if c.legendLeftSide {
			x = c.left + 10
		}
		y := c.top + 4
		for _, e := range c.legend {
			mid := y + fontLegend/2
			switch e.kind {
			case legendBox:
				c.printf(`<path d="M%s %sh10v10h-10Z" style="fill:%s"/>`, px(x+4), px(mid-5), e.color)
			case legendLine, legendLineDot:
				c.printf(`<path d="M%s %sh%d" style="%s"/>`, px(x), px(mid), legendSample, strokeStyle(e.color, 1.6, e.dash))
				if e.kind == legendLineDot {
					c.dot(x+legendSample/2, mid, e.color)
				}
			}
			c.text(x+legendSample+6, mid+fontLegend*0.35, fontLegend, "start", "", e.name)
			y += fontLegend + legendLineGap
		}
	}
	c.b.WriteString("</svg>")
	return c.b.Bytes()
}

// text writes s, escaped, at x, y with the anchor and an optional
// transform.
func (c *svgChart) text(x, y, size float64, anchor, transform, s string) {
	if s == "" {
		return
	}
	t := ""
	if transform != "" {
		t = ` transform="` + transform + `"`
	}
	c.printf(`<text x="%s" y="%s" font-size="%s" text-anchor="%s"%s>%s</text>`, px(x), px(y), px(size), anchor, t, html.EscapeString(s))
}

func (c *svgChart) printf(format string, args ...any) { fmt.Fprintf(&c.b, format, args...) }

// px writes a coordinate with at most two decimals.
func px(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// linearTicks are round positions (1, 2, 2.5 or 5 times a power of ten)
// from min to max, about n of them, labelled by label. Every axis counts
// whole things (bytes, entries, key groups), so no step is below one.
func linearTicks(min, max float64, n int, label func(float64) string) []tick {
	if !(max > min) || n < 1 {
		return []tick{{at: min, label: label(min)}}
	}
	raw := (max - min) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	step = math.Max(step, 1)
	var ticks []tick
	for i := math.Ceil(min / step); i*step <= max+step*1e-9; i++ {
		v := i * step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, tick{at: v, label: label(v)})
	}
	return ticks
}
