package rewrite_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
)

// progressLog records what a rewrite reports to Options.Progress and fails
// the test when two calls overlap, when done does not grow or total
// changes. It takes no lock of its own: the Meter promises one call at a
// time, and the race detector sees the log's writes if it breaks that.
type progressLog struct {
	t       *testing.T
	inside  atomic.Bool
	calls   int
	last    int64
	total   int64
	overlap bool
}

func (l *progressLog) report(done, total int64) {
	if l.inside.Swap(true) {
		l.overlap = true
	}
	// A moment inside the call, so that a meter that lets workers call at
	// once is caught at it.
	time.Sleep(50 * time.Microsecond)
	if l.calls > 0 && total != l.total {
		l.t.Errorf("call %d: total %d, was %d", l.calls, total, l.total)
	}
	if done <= l.last || done > total {
		l.t.Errorf("call %d: done %d after %d, of %d", l.calls, done, l.last, total)
	}
	l.calls++
	l.last, l.total = done, total
	l.inside.Store(false)
}

// check fails unless the reports ended at want, one call at a time, with
// at most one call per segment.
func (l *progressLog) check(want int64, segments int) {
	l.t.Helper()
	if l.overlap {
		l.t.Error("the progress callback was called by two workers at once")
	}
	if l.last != want || l.total != want {
		l.t.Errorf("progress ended at %d of %d, want %d of %d", l.last, l.total, want, want)
	}
	if l.calls == 0 || l.calls > segments {
		l.t.Errorf("%d progress calls for %d segments", l.calls, segments)
	}
}

// A rewrite on several workers, with segments copied, filtered, rewritten
// and dropped, written or a dry run, reports progress that only grows, one
// call at a time and at most once per segment, and ends at the bytes of the
// input's segments.
func TestWriteFilesReportsProgress(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in")
	if err := spgen.Write(in, spgen.Config{Seed: 3, Users: 2000, Accounts: 400, Parallelism: 3, MaxParallelism: 64, Now: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	src := sptest.Open(t, in)
	var want int64
	segments := 0
	for op := range src.Metadata().Operators {
		for _, s := range sptest.OperatorSegments(t, src, op) {
			want += s.Length
			segments++
		}
	}
	keepEven := func(lastModified int64) bool { return lastModified%2 == 0 }
	sameValue := func(dst []byte, e *savepoint.Entry) ([]byte, error) { return append(dst, e.Value...), nil }
	for _, dryRun := range []bool{false, true} {
		t.Run(map[bool]string{false: "write", true: "dry run"}[dryRun], func(t *testing.T) {
			plans, err := rewrite.SameLayout(context.Background(), src, func(seg savepoint.Segment) (rewrite.SegmentPlan, bool) {
				p := rewrite.SegmentPlan{Src: seg, Dst: seg.Ref}
				switch seg.KeyGroup % 4 {
				case 1:
					if ks := src.Metadata().KeyedState(seg.Ref); ks != nil && ks.TTL != nil {
						p.KeepModified = keepEven
					}
				case 2:
					p.Value = sameValue
				case 3:
					p.Drop = true
				}
				return p, true
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := rewrite.PlannedBytes(plans); got != want {
				t.Fatalf("PlannedBytes %d, want %d", got, want)
			}
			if len(plans) < 4 {
				t.Fatalf("%d files: too few to keep 4 workers busy", len(plans))
			}
			log := &progressLog{t: t}
			opts := rewrite.Options{Out: filepath.Join(t.TempDir(), "out"), DryRun: dryRun, Progress: log.report}
			err = rewrite.Execute(context.Background(), in, rewrite.DeriveMetadata(in, src.Metadata(), "test"), opts,
				func(ctx context.Context, o *rewrite.Output) error {
					m := rewrite.NewMeter(rewrite.PlannedBytes(plans), opts.Progress)
					return rewrite.WriteFiles(ctx, src, o, plans, 4, m)
				})
			if err != nil {
				t.Fatal(err)
			}
			log.check(want, segments)
			if !dryRun {
				sptest.Open(t, opts.Out)
			}
		})
	}
}

// A Meter without a callback, or with nothing to count, is nil and ignores
// what it is told.
func TestNilMeter(t *testing.T) {
	if m := rewrite.NewMeter(100, nil); m != nil {
		t.Fatal("a meter without a callback")
	}
	if m := rewrite.NewMeter(0, func(int64, int64) { t.Fatal("called") }); m != nil {
		t.Fatal("a meter over nothing")
	}
	var m *rewrite.Meter
	m.Add(10)
}
