package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
}

// Point is a state's figures in one savepoint. Present is false when the
// savepoint has no such state.
type Point struct {
	Created              int64
	Present              bool
	Keys, Entries, Bytes uint64
}

// The rule of growth without bound. Over at least minPoints savepoints in
// which the state exists, taken at a steady pace, a measure (entries or bytes) must rise by at
// least minRise of its last value, rise steadily (its order agrees with the
// order in time: a rank correlation of at least minRank), and rise in the
// later half of the savepoints at least keepPace times as fast as in the
// earlier half. A buffer that fills and drains (the requests in flight,
// the records waiting for a watermark) wanders about a level; a state that
// fills up and levels off (the tenants of a fixed set) rises fast and then
// stops; a leak keeps rising, at a steady pace or faster.
const (
	minPoints = 3
	minRise   = 0.25
	minRank   = 0.9
	keepPace  = 0.5
)

// growth gathers every state's series from the savepoints' inspect
// reports and judges each; states empty in every savepoint are left out.
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
		if g.empty() {
			continue
		}
		g.judge()
		out = append(out, *g)
	}
	return out
}

// empty says the state holds nothing in any savepoint: it has no growth
// to show.
func (g *Growth) empty() bool {
	for _, p := range g.Points {
		if p.Entries > 0 || p.Bytes > 0 {
			return false
		}
	}
	return true
}

// judge applies the rule to the entries and the bytes of g.
func (g *Growth) judge() {
	// The savepoints are spaced by their order, not by their creation
	// times: a job's clock is its event time, which a source that runs
	// ahead (GatewayMeter's price table) moves in jumps, and savepoints are
	// taken at a steady pace (periodically, or at regular source
	// positions).
	var xs, entries, bytes []float64
	for i, p := range g.Points {
		if !p.Present {
			continue
		}
		xs = append(xs, float64(i))
		entries = append(entries, float64(p.Entries))
		bytes = append(bytes, float64(p.Bytes))
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
	if rho := rankCorrelation(ys); rho < minRank {
		return false, fmt.Sprintf("rise from %g to %g, but unsteadily: their rank correlation with time is %.2f", first, last, rho)
	}
	mid := (xs[0] + xs[n-1]) / 2
	yMid := interpolate(xs, ys, mid)
	early := (yMid - first) / (mid - xs[0])
	late := (last - yMid) / (xs[n-1] - mid)
	if late <= 0 || late < keepPace*early {
		return false, fmt.Sprintf("level off: the later half of the savepoints rises %.3g times as fast as the earlier", late/early)
	}
	return true, fmt.Sprintf("rise steadily from %g to %g, and not slower in the later half of the savepoints", first, last)
}

// rankCorrelation is Spearman's rank correlation of ys with their order:
// 1 when each is above the one before, -1 when each is below; equal values
// share their mean rank.
func rankCorrelation(ys []float64) float64 {
	n := len(ys)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ys[a], ys[b]) })
	ranks := make([]float64, n)
	for i := 0; i < n; {
		j := i + 1
		for j < n && ys[idx[j]] == ys[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			ranks[idx[k]] = float64(i+j-1) / 2
		}
		i = j
	}
	// The Pearson correlation of the ranks with 0..n-1.
	mean := float64(n-1) / 2
	var sxy, sxx, syy float64
	for i, r := range ranks {
		dx, dy := float64(i)-mean, r-mean
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
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
