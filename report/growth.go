package report

import (
	"fmt"
)

// Growth is one keyed state or timer service over the savepoints, oldest
// first.
type Growth struct {
	Operator, Name string
	// Kind is the state's kind, or "timers".
	Kind   string
	Points []Point
	// Unbounded says the state grows without bound; Growing names the
	// measures (entries, bytes) that do and Reason says why, in words.
	Unbounded bool
	Growing   []string
	Reason    string
	// ByOrder says two savepoints had one creation time, so the rule and
	// the chart space the savepoints evenly in their order instead.
	ByOrder bool
}

// Point is a state's figures in one savepoint. Present is false when the
// savepoint has no such state.
type Point struct {
	Created              int64
	Present              bool
	Keys, Entries, Bytes uint64
}

// The rule of growth without bound. Over at least minPoints savepoints in
// which the state exists, a measure (entries or bytes) must rise by at
// least minRise of its last value, follow a straight line closely (a least
// squares fit explains at least minR2 of its variance), and rise in the
// later half of the time span at least keepPace times as fast as in the
// earlier half. A buffer that fills and drains (the requests in flight, the
// records waiting for a watermark) wanders about a level and fits no line;
// a state that fills up and levels off (the tenants of a fixed set) rises
// fast and then stops; a leak keeps rising.
const (
	minPoints = 3
	minRise   = 0.1
	minR2     = 0.9
	keepPace  = 0.5
)

// growth gathers every state's series from the savepoints' inspect
// reports and judges each.
func growth(sps []Savepoint) []Growth {
	type id struct {
		op, name string
		timers   bool
	}
	var order []id
	series := map[id]*Growth{}
	get := func(k id, kind string) *Growth {
		g := series[k]
		if g == nil {
			g = &Growth{Operator: k.op, Name: k.name, Kind: kind, Points: make([]Point, len(sps))}
			for i := range sps {
				g.Points[i].Created = sps[i].Created()
			}
			series[k] = g
			order = append(order, k)
		}
		return g
	}
	for i, sp := range sps {
		for _, s := range sp.Inspect.States {
			g := get(id{s.Operator, s.Name, false}, s.Kind)
			g.Points[i] = Point{Created: sp.Created(), Present: true, Keys: s.Keys, Entries: s.Entries, Bytes: s.Bytes}
		}
		for _, t := range sp.Inspect.Timers {
			g := get(id{t.Operator, t.Name, true}, "timers")
			g.Points[i] = Point{Created: sp.Created(), Present: true, Entries: t.Timers, Bytes: t.Bytes}
		}
	}
	out := make([]Growth, 0, len(order))
	for _, k := range order {
		g := series[k]
		g.judge()
		out = append(out, *g)
	}
	return out
}

// judge applies the rule to the entries and the bytes of g.
func (g *Growth) judge() {
	var xs, entries, bytes []float64
	increasing := true
	for _, p := range g.Points {
		if !p.Present {
			continue
		}
		if len(xs) > 0 && float64(p.Created) <= xs[len(xs)-1] {
			increasing = false
		}
		xs = append(xs, float64(p.Created))
		entries = append(entries, float64(p.Entries))
		bytes = append(bytes, float64(p.Bytes))
	}
	g.ByOrder = !increasing
	if !increasing {
		// Two savepoints were created at one time by the job's clock (an
		// event-time clock can stand still while input flows): their
		// order is all that is known, so they are spaced evenly.
		for i := range xs {
			xs[i] = float64(i)
		}
	}
	if len(xs) < minPoints {
		g.Reason = fmt.Sprintf("in %d savepoints: %d are needed to tell growth that levels off from growth that does not", len(xs), minPoints)
		return
	}
	var reasons []string
	for _, m := range []struct {
		name string
		ys   []float64
	}{{"entries", entries}, {"bytes", bytes}} {
		ok, why := unbounded(xs, m.ys)
		if ok {
			g.Growing = append(g.Growing, m.name)
			reasons = append(reasons, m.name+" "+why)
		} else if m.name == "entries" {
			g.Reason = "entries " + why
		}
	}
	if len(g.Growing) > 0 {
		g.Unbounded = true
		g.Reason = reasons[0]
		if len(reasons) > 1 {
			g.Reason += "; " + reasons[1]
		}
	}
}

// unbounded applies the rule to one measure ys at times xs (increasing),
// and says why in words.
func unbounded(xs, ys []float64) (bool, string) {
	n := len(ys)
	first, last := ys[0], ys[n-1]
	if last <= first {
		return false, fmt.Sprintf("do not rise: %g, then %g", first, last)
	}
	if last-first < minRise*last {
		return false, fmt.Sprintf("rise from %g to %g, less than %g%% of the last", first, last, 100*minRise)
	}
	if r2 := fit(xs, ys); r2 < minR2 {
		return false, fmt.Sprintf("rise from %g to %g, but unsteadily: a straight line explains %.0f%% of it", first, last, 100*r2)
	}
	mid := (xs[0] + xs[n-1]) / 2
	yMid := interpolate(xs, ys, mid)
	early := (yMid - first) / (mid - xs[0])
	late := (last - yMid) / (xs[n-1] - mid)
	if late <= 0 || late < keepPace*early {
		return false, fmt.Sprintf("level off: the later half rises %.3g times as fast as the earlier", late/early)
	}
	return true, fmt.Sprintf("rise steadily from %g to %g, and not slower in the later half of the time", first, last)
}

// fit returns the share of the variance of ys that the least squares line
// through (xs, ys) explains: 1 for points on a line.
func fit(xs, ys []float64) float64 {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i] / n
		my += ys[i] / n
	}
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy * sxy / (sxx * syy)
}

// interpolate reads the piecewise linear curve through (xs, ys) at x.
func interpolate(xs, ys []float64, x float64) float64 {
	for i := 1; i < len(xs); i++ {
		if x <= xs[i] {
			f := (x - xs[i-1]) / (xs[i] - xs[i-1])
			return ys[i-1] + f*(ys[i]-ys[i-1])
		}
	}
	return ys[len(ys)-1]
}
