package report_test

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway/gatewaytest"
	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/report"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/sizing"
	"github.com/stateproc/stateproc/snapshotfmt"
)

func inputs(t *testing.T, dirs ...string) []report.Input {
	t.Helper()
	var out []report.Input
	for _, d := range dirs {
		src, err := layouts.Open(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		out = append(out, report.Input{Path: d, Source: src})
	}
	return out
}

func build(t *testing.T, dirs ...string) *report.Report {
	t.Helper()
	rep, err := report.Build(context.Background(), inputs(t, dirs...), report.Options{TempDir: t.TempDir(),
		Sizing: sizing.Options{ChangeRate: 0.01, MemoryPerSlot: 4e9, FullCheckpointLimit: 1e9, GOGC: 100}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func growthOf(t *testing.T, rep *report.Report, uid, name string) report.Growth {
	t.Helper()
	for _, g := range rep.Growth {
		if g.Operator == uid && g.Name == name {
			return g
		}
	}
	t.Fatalf("no growth of %s/%s", uid, name)
	return report.Growth{}
}

// GatewayMeter at four increasing source positions, 7 to 22 minutes of
// event time, run out of order on deterministic time so that each
// savepoint's creation time is where its run's watermark got to, not when
// the run happened: in the leak variant every abandoned request stays in `open`,
// which grows without bound; with the abandonment timer `open` holds the
// requests in flight and those abandoned in the last five minutes, and
// wanders about a level. usd_total, one per tenant of a fixed set, levels
// off in both, and the pending records waiting for the watermark are a
// buffer.
func TestGrowthOfGatewayMeter(t *testing.T) {
	for _, leak := range []bool{true, false} {
		t.Run(fmt.Sprintf("leak=%v", leak), func(t *testing.T) {
			dir := t.TempDir()
			cfg := gateway.Config{Seed: 3, Events: 140000, Parallelism: 2, MaxParallelism: 128, Leak: leak}
			var dirs []string
			for _, n := range []int64{130000, 40000, 100000, 70000} {
				sp := filepath.Join(dir, fmt.Sprintf("at-%d", n))
				gatewaytest.Run(t, cfg, gateway.Sinks{}, engine.RunOptions{Backend: engine.Heap, ProcessingTime: engine.DeterministicTime, StopAfter: n, SavepointDir: sp})
				dirs = append(dirs, sp)
			}
			rep := build(t, dirs...)
			for i, want := range []string{"at-40000", "at-70000", "at-100000", "at-130000"} {
				if filepath.Base(rep.Savepoints[i].Path) != want {
					t.Fatalf("savepoint %d is %s, want %s", i, rep.Savepoints[i].Path, want)
				}
			}
			open := growthOf(t, rep, gateway.AssembleUID, gateway.OpenState)
			if open.Unbounded != leak {
				t.Errorf("open: unbounded %v (%s), points %+v", open.Unbounded, open.Reason, open.Points)
			}
			for _, name := range []string{gateway.USDTotalState, gateway.PendingState} {
				if g := growthOf(t, rep, gateway.TenantCostUID, name); g.Unbounded {
					t.Errorf("%s: unbounded (%s), points %+v", name, g.Reason, g.Points)
				}
			}
			t.Logf("open: %+v: %s", open.Points, open.Reason)
		})
	}
}

// The histograms of the report count what the savepoint holds, read
// independently: every value's size, the timers of every key, the bytes of
// every key group.
func TestHistograms(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sp")
	if err := spgen.Write(dir, spgen.Config{Seed: 7, Users: 700, Accounts: 90, Parallelism: 3, MaxParallelism: 256, Now: 1_767_225_600_000}); err != nil {
		t.Fatal(err)
	}
	rep := build(t, dir)
	src := inputs(t, dir)[0].Source
	m := src.Metadata()
	for _, sc := range rep.Latest.States {
		op, _ := m.Operator(sc.Operator)
		ref, _ := m.Find(index(m, sc.Operator), sc.Name)
		var entries []savepoint.Entry
		if sc.Timers {
			entries = sptest.Timers(t, src, sc.Operator, sc.Name)
		} else {
			entries = sptest.Entries(t, src, sc.Operator, sc.Name)
		}
		want := map[int64]uint64{}
		if sc.Timers {
			perKey := map[string]int{}
			for _, e := range entries {
				perKey[string(e.Key)]++
			}
			for _, n := range perKey {
				want[int64(bits.Len(uint(n)))]++
			}
		} else {
			ttl := m.KeyedState(ref).TTL != nil
			for _, e := range entries {
				n := len(e.Value)
				if ttl {
					n -= 8
				}
				want[int64(bits.Len(uint(n)))]++
			}
		}
		bins := sc.ValueSizes
		if sc.Timers {
			bins = sc.TimersPerKey
		}
		got := map[int64]uint64{}
		for _, b := range bins {
			if b.Count > 0 {
				got[int64(bits.Len64(uint64(b.Hi)))] = b.Count
			}
			if b.Lo > 0 && bits.Len64(uint64(b.Lo)) != bits.Len64(uint64(b.Hi)) {
				t.Errorf("%s/%s: bin %d-%d is not a power of two", sc.Operator, sc.Name, b.Lo, b.Hi)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || len(entries) == 0 {
			t.Errorf("%s/%s: histogram %v, the entries say %v", sc.Operator, sc.Name, got, want)
		}
		perKG := make([]uint64, op.MaxParallelism)
		for _, seg := range sptest.Segments(t, src, ref) {
			perKG[seg.KeyGroup] = seg.Bytes
		}
		if fmt.Sprint(perKG) != fmt.Sprint(sc.KeyGroupBytes) || sc.Parallelism != 3 || sc.MaxParallelism != 256 {
			t.Errorf("%s/%s: bytes per key group differ from the index", sc.Operator, sc.Name)
		}
	}
}

func index(m *savepoint.Metadata, uid string) int {
	for i := range m.Operators {
		if m.Operators[i].UID == uid {
			return i
		}
	}
	return -1
}

// Names come from the savepoint: a hostile one is text on the page, never
// markup, and the page refers to nothing outside itself.
func TestPageIsSelfContainedAndEscaped(t *testing.T) {
	hostile := `</svg><script>alert("x")</script>`
	str := serializers.Snapshot{Kind: serializers.KindString}
	meta := &savepoint.Metadata{ID: 3, CreatedAt: 1_767_225_600_000, Operators: []savepoint.Operator{{
		UID: hostile, Name: hostile, Parallelism: 2, MaxParallelism: 128, KeyHash: keygroup.Murmur3, Key: str,
		States: []savepoint.KeyedState{{Name: hostile, Kind: savepoint.Value, Namespace: serializers.Snapshot{Kind: serializers.KindVoid}, Value: str}},
		Timers: []savepoint.TimerService{{Name: hostile + "-timers", Namespace: serializers.Snapshot{Kind: serializers.KindVoid}}},
	}}}
	var values, timers []savepoint.Entry
	for i := range 300 {
		k := fmt.Appendf(nil, "<b>key-%d</b>", i)
		values = append(values, savepoint.Entry{Key: k, Value: []byte(hostile)})
		timers = append(timers, savepoint.Entry{Key: k, Timestamp: int64(1_767_225_600_000 + i)})
	}
	dir := filepath.Join(t.TempDir(), "sp")
	if err := sptest.Write(dir, meta, map[savepoint.StateRef][]savepoint.Entry{{}: values, {Timer: true}: timers}, snapshotfmt.Options{}); err != nil {
		t.Fatal(err)
	}
	rep := build(t, dir)
	var page bytes.Buffer
	charts, err := report.Write(&page, rep)
	if err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if charts < 4 || strings.Count(html, "<svg") != charts {
		t.Fatalf("%d charts, %d svg elements", charts, strings.Count(html, "<svg"))
	}
	for _, bad := range []string{"<script", "<img", "<link", "<iframe", "<object", "@import", "url(", "src=", "href=\"http"} {
		if strings.Contains(strings.ToLower(html), bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	// The only URLs are the SVG namespaces, which nothing loads.
	for _, u := range regexp.MustCompile(`https?://[^"'\s<>]*`).FindAllString(html, -1) {
		if u != "http://www.w3.org/2000/svg" && u != "http://www.w3.org/1999/xlink" {
			t.Errorf("the page refers to %s", u)
		}
	}
	if !strings.Contains(html, "&lt;/svg&gt;&lt;script&gt;") {
		t.Error("the hostile name is not on the page as text")
	}
}
