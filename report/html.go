package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/sizing"
)

//go:embed page.html
var pageHTML string

// pageTemplate is parsed on first use rather than at package init, which
// every command of the binary would pay for, not only report.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"count": countText, "bytes": bytesText, "float": floatText, "time": timeText, "pct": pctText,
		"raw": raw, "rawf": rawFloat, "key": keyText, "bf": bytesFloat, "brange": rangeText,
		"bf1": func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) },
	}).Parse(pageHTML))
})

// Write renders r as one HTML page, charts inlined, and returns how many
// charts it drew.
func Write(w io.Writer, r *Report) (int, error) {
	v, err := newView(r)
	if err != nil {
		return 0, err
	}
	if err := pageTemplate().Execute(w, v); err != nil {
		return 0, fmt.Errorf("report: %w", err)
	}
	return v.charts, nil
}

// view is what the template reads: the report with its charts drawn and
// its words chosen.
type view struct {
	*Report
	Latest  *Savepoint
	Details []detail
	Growth  []growthView
	Sizing  *sizingView
	charts  int
}

type chart struct {
	Kind    string
	Caption string
	Note    string
	SVG     template.HTML
}

type detail struct {
	Operator, Name, Kind, Types string
	Timers                      bool
	// Empty says the state holds nothing, so it has no charts.
	Empty   bool
	Charts  *StateCharts
	Figures []figure
	List    []chart
}

// figure is one number of a state, with its exact value for machines and
// its text for people.
type figure struct {
	Name, Label, Value, Text string
}

type growthView struct {
	*Growth
	First, Last Point
	Chart       chart
}

type sizingView struct {
	*sizing.Report
	Chart  chart
	Advice []string
}

func newView(r *Report) (*view, error) {
	v := &view{Report: r, Latest: r.Latest.Savepoint}
	for i := range r.Latest.States {
		d, err := v.detail(&r.Latest.States[i])
		if err != nil {
			return nil, err
		}
		v.Details = append(v.Details, d)
	}
	for i := range r.Growth {
		g := &r.Growth[i]
		gv := growthView{Growth: g}
		for _, p := range g.Points {
			if p.Present {
				if !gv.First.Present {
					gv.First = p
				}
				gv.Last = p
			}
		}
		gv.Chart = v.chart("growth", g.Operator+" / "+g.Name+": entries and keys in each savepoint", growthChart(g))
		v.Growth = append(v.Growth, gv)
	}
	if r.Sizing != nil {
		sv := &sizingView{Report: r.Sizing, Advice: advice(r.Sizing)}
		sv.Chart = v.chart("sizing", "per task slot: the heap backend's live heap (upper estimate), Pebble on disk, a full checkpoint", sizingChart(r.Sizing))
		v.Sizing = sv
	}
	return v, nil
}

func (v *view) chart(kind, caption string, svg []byte) chart {
	if svg == nil {
		return chart{}
	}
	v.charts++
	return chart{Kind: kind, Caption: caption, SVG: template.HTML(svg)}
}

func (v *view) detail(s *StateCharts) (detail, error) {
	d := detail{Operator: s.Operator, Name: s.Name, Timers: s.Timers, Charts: s}
	d.Empty = (s.Timer != nil && s.Timer.Timers == 0) || (s.State != nil && s.State.Entries == 0)
	var kgSVG []byte
	if !d.Empty {
		kgSVG = skewChart(s)
	}
	caption := fmt.Sprintf("bytes per key group; subtask boundaries at parallelism %d, max parallelism %d", s.Parallelism, s.MaxParallelism)
	if t := s.Timer; s.Timers && t != nil {
		d.Kind, d.Types = "timers", "namespace "+t.NamespaceType
		d.Figures = []figure{
			{"timers", "timers", raw(t.Timers), countText(t.Timers)},
			{"bytes", "bytes", raw(t.Bytes), bytesText(t.Bytes)},
		}
		if t.MaxPerKey != nil {
			d.Figures = append(d.Figures, figure{"max_per_key", "most per key", raw(*t.MaxPerKey), countText(*t.MaxPerKey)})
		}
		if t.Earliest != nil {
			d.Figures = append(d.Figures, figure{"earliest", "earliest", jsonvalue.Time(int64(*t.Earliest)), timeText(*t.Earliest)},
				figure{"latest", "latest", jsonvalue.Time(int64(*t.Latest)), timeText(*t.Latest)})
		}
		d.List = append(d.List, v.chart("skew", caption, kgSVG))
		if len(s.TimersPerKey) > 0 && !d.Empty {
			labels, counts := binsOf(s.TimersPerKey, countLabel)
			// A key holding several timers is no leak by itself (timers
			// registered per record each fire soon): size's findings judge
			// the timers' times, and no bar here is an alarm.
			svg := barChart("timers per key", "keys", labels, counts, nil)
			c := v.chart("timers-per-key", "keys by their number of timers", svg)
			d.List = append(d.List, c)
		}
		return d, nil
	}
	st := s.State
	if st == nil {
		return d, fmt.Errorf("report: no inspect figures for %s/%s", s.Operator, s.Name)
	}
	d.Kind = st.Kind
	d.Types = "key " + st.KeyType
	if st.NamespaceType != "void" {
		d.Types += ", namespace " + st.NamespaceType
	}
	if st.MapKeyType != "" {
		d.Types += ", map key " + st.MapKeyType
	}
	d.Types += ", value " + st.ValueType
	if st.TTL != nil {
		d.Types += ", TTL " + st.TTL.TTL
	}
	d.Figures = []figure{
		{"keys", "keys", raw(st.Keys), countText(st.Keys)},
		{"entries", "entries", raw(st.Entries), countText(st.Entries)},
		{"bytes", "bytes", raw(st.Bytes), bytesText(st.Bytes)},
		{"bytes_per_entry", "bytes per entry", rawFloat(st.BytesPerEntry), floatText(st.BytesPerEntry)},
		{"skew", "skew", rawFloat(st.Skew), floatText(st.Skew)},
	}
	if vs := st.ValueSize; vs != nil {
		d.Figures = append(d.Figures,
			figure{"value_size.p50", "value p50", strconv.Itoa(vs.P50), strconv.Itoa(vs.P50) + " B"},
			figure{"value_size.p99", "value p99", strconv.Itoa(vs.P99), strconv.Itoa(vs.P99) + " B"},
			figure{"value_size.max", "value max", strconv.Itoa(vs.Max), strconv.Itoa(vs.Max) + " B"})
	}
	d.List = append(d.List, v.chart("skew", caption, kgSVG))
	if len(s.ValueSizes) > 0 && !d.Empty {
		labels, counts := binsOf(s.ValueSizes, sizeLabel)
		svg := barChart("value size (bytes, without the TTL timestamp)", "values", labels, counts, nil)
		d.List = append(d.List, v.chart("value-sizes", "values by size, in power-of-two bins", svg))
	}
	if a := st.Ages; a != nil && st.TTL != nil && !d.Empty {
		var all uint64
		labels, counts := []string{}, []float64{}
		var alarm []bool
		if a.Future > 0 {
			labels, counts, alarm = append(labels, "future"), append(counts, float64(a.Future)), append(alarm, false)
			all += a.Future
		}
		for _, b := range a.Buckets {
			to := "∞"
			if b.ToMillis != nil {
				to = jsonvalue.Duration(*b.ToMillis)
			}
			labels = append(labels, jsonvalue.Duration(b.FromMillis)+"–"+to)
			counts = append(counts, float64(b.Entries))
			alarm = append(alarm, b.FromMillis >= st.TTL.TTLMillis)
			all += b.Entries
		}
		share := 0.0
		if all > 0 {
			share = float64(a.Expired) / float64(all)
		}
		d.Figures = append(d.Figures,
			figure{"ttl_ages.expired", "past TTL", raw(a.Expired), countText(a.Expired)},
			figure{"ttl_ages.expired_share", "past TTL share", rawFloat(share), pctText(share)})
		svg := barChart("age at "+timeText(v.Latest.Inspect.Now)+" (TTL "+st.TTL.TTL+")", "entries", labels, counts, func(i int) bool { return alarm[i] })
		c := v.chart("ttl-ages", fmt.Sprintf("entries by age since last modified; past their TTL, in the alarm color: %s of the entries", pctText(share)), svg)
		d.List = append(d.List, c)
	}
	return d, nil
}

func binsOf(bins []Bin, label func(Bin) string) ([]string, []float64) {
	var labels []string
	var counts []float64
	for _, b := range bins {
		labels = append(labels, label(b))
		counts = append(counts, float64(b.Count))
	}
	return labels, counts
}

// advice says in words what size recommends and why.
func advice(r *sizing.Report) []string {
	rec := r.Recommendation
	var out []string
	switch rec.Backend {
	case "heap":
		out = append(out, "Recommended: the heap backend.")
	default:
		out = append(out, "Recommended: Pebble, with incremental checkpoints.")
	}
	fits := "fits"
	if !rec.HeapFits {
		fits = "does not fit"
	}
	out = append(out, fmt.Sprintf("The busiest slot (%d) holds %s of live heap on the heap backend; with the collector's headroom at GOGC %d it needs %s, which %s the %s per slot.",
		rec.HeapSlot, rangeText(rec.HeapPerSlot), rec.GOGC, rangeText(rec.HeapNeeded), fits, bytesFloat(rec.MemoryPerSlot)))
	large := "within"
	if rec.FullTooLarge {
		large = "above"
	}
	out = append(out, fmt.Sprintf("Every heap checkpoint is full: %s for that slot, %s the limit of %s. On Pebble the slot with the most on disk (%d) holds %s; an incremental checkpoint writes about %s at a change rate of %s.",
		bytesFloat(rec.FullPerSlot), large, bytesFloat(rec.FullCheckpointLimit), rec.PebbleSlot, bytesFloat(rec.PebblePerSlot),
		bytesFloat(r.Checkpoints.Incremental), pctText(r.Checkpoints.ChangeRate)))
	return out
}

func raw(v uint64) string        { return strconv.FormatUint(v, 10) }
func rawFloat(v float64) string  { return strconv.FormatFloat(v, 'g', -1, 64) }
func floatText(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
func pctText(v float64) string   { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }
func timeText(t jsonvalue.Instant) string {
	return strings.Replace(strings.TrimSuffix(jsonvalue.Time(int64(t)), "Z"), "T", " ", 1) + " UTC"
}

// countText groups the digits of n by thousands: 1,234,567.
func countText(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func bytesText(n uint64) string { return bytesFloat(float64(n)) }

// bytesFloat writes a byte count in decimal units, as size prints them.
func bytesFloat(v float64) string {
	for _, u := range []struct {
		f float64
		s string
	}{{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}} {
		if math.Abs(v) >= u.f {
			return strconv.FormatFloat(v/u.f, 'f', 1, 64) + " " + u.s
		}
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " B"
}

func rangeText(r sizing.Range) string {
	if bytesFloat(r.Low) == bytesFloat(r.High) {
		return bytesFloat(r.High)
	}
	return bytesFloat(r.Low) + " to " + bytesFloat(r.High)
}

// keyText renders a decoded key for a table cell.
func keyText(k any) string {
	if s, ok := k.(string); ok {
		return s
	}
	b, err := json.Marshal(k)
	if err != nil {
		return fmt.Sprint(k)
	}
	return string(b)
}
