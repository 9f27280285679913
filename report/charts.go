package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/sizing"
)

// maxSkewBars is the most bars a skew chart draws: more key groups are
// summed into as many bars.
const maxSkewBars = 512

// countAxis is the y axis of counts or bytes from 0 to max, labelled with
// round numbers in SI units: 0, 2.5k, 5k.
func countAxis(label string, max float64) axis {
	return axis{min: 0, max: max, label: label, ticks: linearTicks(0, max, 4, si)}
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
func skewChart(s *StateCharts) []byte {
	per := max(1, (s.MaxParallelism+maxSkewBars-1)/maxSkewBars)
	type bin struct{ lo, hi, sum float64 }
	var bins []bin
	var total, top float64
	for kg := 0; kg < s.MaxParallelism; kg += per {
		var sum float64
		for k := kg; k < min(kg+per, s.MaxParallelism); k++ {
			sum += float64(s.KeyGroupBytes[k])
		}
		total += sum
		top = math.Max(top, sum)
		bins = append(bins, bin{float64(kg), float64(min(kg+per, s.MaxParallelism)), sum})
	}
	top = math.Max(top, 1)
	ylabel := "bytes"
	if per > 1 {
		ylabel = fmt.Sprintf("bytes per %d key groups", per)
	}
	maxp := float64(s.MaxParallelism)
	c := newChart(axis{min: 0, max: maxp, label: "key group", ticks: linearTicks(0, maxp, 6, si)}, countAxis(ylabel, top*1.08))
	c.begin()
	for _, b := range bins {
		c.bar(c.X(b.lo), c.X(b.hi), b.sum, colorBar)
	}
	for i := 1; i < s.Parallelism; i++ {
		x := float64(keygroup.ForSubtask(i, s.Parallelism, s.MaxParallelism).Start)
		c.line([]float64{x, x}, []float64{0, top * 1.05}, colorBoundary, 1.6, "4,2.7")
		if i == 1 {
			c.addLegend(legendEntry{name: "subtask boundary", color: colorBoundary, dash: "4,2.7"})
		}
	}
	if n := len(bins); n > 0 && total > 0 {
		mean := total / float64(n)
		c.line([]float64{0, maxp}, []float64{mean, mean}, colorMuted, 1.1, "")
		c.addLegend(legendEntry{name: "mean", color: colorMuted})
	}
	return c.finish()
}

// nominalAxis is an x axis with one category per label.
func nominalAxis(label string, labels []string) axis {
	a := axis{min: -0.5, max: float64(len(labels)) - 0.5, label: label, nominal: true}
	for i, l := range labels {
		a.ticks = append(a.ticks, tick{at: float64(i), label: l})
	}
	return a
}

// barChart draws one bar per label; alarm says which bars to draw in the
// alarm color.
func barChart(x, y string, labels []string, counts []float64, alarm func(int) bool) []byte {
	top := 1.0
	for _, v := range counts {
		top = math.Max(top, v)
	}
	c := newChart(nominalAxis(x, labels), countAxis(y, top*1.08))
	c.begin()
	width := math.Min(37, (c.right-c.left)*0.7/float64(max(1, len(counts))))
	for i, v := range counts {
		color := colorBar
		if alarm != nil && alarm(i) {
			color = colorAlarm
		}
		mid := c.X(float64(i))
		c.bar(mid-width/2, mid+width/2, v, color)
	}
	return c.finish()
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
func growthChart(g *Growth) []byte {
	var ticks []tick
	var xs, entries, keys []float64
	for i, pt := range g.Points {
		ticks = append(ticks, tick{at: float64(i), label: "#" + strconv.Itoa(i)})
		if !pt.Present {
			continue
		}
		xs = append(xs, float64(i))
		entries = append(entries, float64(pt.Entries))
		keys = append(keys, float64(pt.Keys))
	}
	if allZero(entries) {
		return nil
	}
	color := colorBar
	if g.Unbounded {
		color = colorAlarm
	}
	top := 1.0
	for _, e := range entries {
		top = math.Max(top, e)
	}
	// Room above the lines for the legend.
	x := axis{min: -0.2, max: float64(len(g.Points)-1) + 0.2, label: "savepoint, oldest first (# as in the table of savepoints)", ticks: ticks}
	c := newChart(x, countAxis("count", top*1.3))
	c.legendLeftSide = true
	c.begin()
	c.line(xs, entries, color, 2.1, "")
	c.dots(xs, entries, color)
	c.addLegend(legendEntry{name: "entries", color: color, kind: legendLineDot})
	if g.Kind != "timers" && !sameY(entries, keys) {
		c.line(xs, keys, colorSecond, 2.1, "5.3,2.7")
		c.dots(xs, keys, colorSecond)
		c.addLegend(legendEntry{name: "keys", color: colorSecond, kind: legendLineDot, dash: "5.3,2.7"})
	}
	return c.finish()
}

func allZero(ys []float64) bool {
	for _, y := range ys {
		if y != 0 {
			return false
		}
	}
	return true
}

func sameY(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sizingChart draws, per task slot, the live heap on the heap backend (its
// upper estimate), the bytes on disk on Pebble and a full checkpoint.
func sizingChart(rep *sizing.Report) []byte {
	if len(rep.Slots) == 0 {
		return nil
	}
	var labels []string
	top := 1.0
	for _, s := range rep.Slots {
		labels = append(labels, "slot "+strconv.Itoa(s.Slot))
		top = math.Max(top, math.Max(s.Heap.High, math.Max(s.Pebble, s.Savepoint)))
	}
	c := newChart(nominalAxis("task slot", labels), countAxis("bytes", top*1.3))
	c.begin()
	w := math.Min(40, (c.right-c.left)*0.25/float64(len(rep.Slots)))
	series := []struct {
		color, name string
		value       func(sizing.SlotReport) float64
	}{
		{colorBar, "heap backend (live heap)", func(s sizing.SlotReport) float64 { return s.Heap.High }},
		{colorSecond, "Pebble (on disk)", func(s sizing.SlotReport) float64 { return s.Pebble }},
		{colorMuted, "full checkpoint", func(s sizing.SlotReport) float64 { return s.Savepoint }},
	}
	for i, s := range series {
		for j, slot := range rep.Slots {
			mid := c.X(float64(j)) + float64(i-1)*w
			c.bar(mid-w/2, mid+w/2, s.value(slot), s.color)
		}
		c.addLegend(legendEntry{name: s.name, color: s.color, kind: legendBox})
	}
	return c.finish()
}
