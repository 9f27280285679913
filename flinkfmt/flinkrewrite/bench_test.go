package flinkrewrite

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/internal/flinkgen"
)

var benchSavepoint = flag.String("flinkrewrite.savepoint", "",
	"a savepoint written by bench/genflink to benchmark on (go run ./bench/genflink -out DIR); by default a small one is generated")

// benchInput returns the savepoint to benchmark on and its entries.
func benchInput(b *testing.B) (*flinkfmt.Reader, time.Time) {
	dir := *benchSavepoint
	if dir == "" {
		dir, _ = sessions(b, 20000, false)
	}
	return open(b, dir), time.Unix(0, flinkgen.SessionsLarge().Now*int64(time.Millisecond))
}

// BenchmarkRescale rescales the sessions savepoint from max parallelism
// 128 to 256, reporting entries per second of the whole rewrite (spill,
// sort, write, sync).
func BenchmarkRescale(b *testing.B) {
	r, _ := benchInput(b)
	for b.Loop() {
		st := stage(b)
		start := time.Now()
		rep, err := Rescale(context.Background(), r, st, RescaleOptions{MaxParallelism: 256, SpillDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Publish(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.Operators[0].Entries)/time.Since(start).Seconds(), "entries/s")
	}
}

// BenchmarkPruneTTL prunes the sessions savepoint's category-counts a day
// after the savepoint, which drops about a sixth of them.
func BenchmarkPruneTTL(b *testing.B) {
	r, now := benchInput(b)
	for b.Loop() {
		st := stage(b)
		start := time.Now()
		rep, err := PruneTTL(context.Background(), r, st, PruneOptions{Now: now.Add(24 * time.Hour).UnixMilli(),
			TTL: map[string]time.Duration{countsRef: flinkgen.CountsTTL}})
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Publish(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.States[0].Before)/time.Since(start).Seconds(), "entries/s")
	}
}
