package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// counted wraps a source to count the records its readers return.
type counted[T any] struct {
	engine.Source[T]
	read *atomic.Int64
}

func (c counted[T]) Open(ctx context.Context, split int, offset int64) (engine.SplitReader[T], error) {
	r, err := c.Source.Open(ctx, split, offset)
	return &countingReader[T]{SplitReader: r, read: c.read}, err
}

// countBatch keeps the shared counter off the per-record path.
const countBatch = 4096

type countingReader[T any] struct {
	engine.SplitReader[T]
	read  *atomic.Int64
	local int64
}

func (r *countingReader[T]) Next(ctx context.Context) (T, int64, bool, error) {
	v, ts, ok, err := r.SplitReader.Next(ctx)
	if ok {
		if r.local++; r.local == countBatch {
			r.read.Add(countBatch)
			r.local = 0
		}
	}
	return v, ts, ok, err
}

// generate runs b's job at scale into target and reports on stderr.
func generate(ctx context.Context, b benchmark, scale float64, target string, every time.Duration, stderr io.Writer) error {
	var read atomic.Int64
	j, total, what, err := b.build(scale, &read)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %s; %s, parallelism %d, max parallelism %d, no drain, no compression\n", b.name, what, backend, parallelism, maxParallelism)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				n := read.Load()
				fmt.Fprintf(stderr, "%s: %d of %d records read (%.0f%%) after %v\n", b.name, n, total, 100*float64(n)/float64(total), time.Since(start).Round(time.Second))
			}
		}
	}()
	_, err = engine.Run(ctx, j, engine.RunOptions{Backend: backend, ProcessingTime: engine.DeterministicTime, StopAfter: total, SavepointDir: target})
	close(done)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	files, bytes, err := dirSize(target)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: wrote %s in %v (%.0f records/s): %d files, %d bytes\n", b.name, target, elapsed.Round(time.Millisecond),
		float64(total)/elapsed.Seconds(), files, bytes)
	return describe(ctx, target, stderr, b.name)
}

// describe prints the entries of every keyed state and timer service, from
// the savepoint's index alone.
func describe(ctx context.Context, dir string, w io.Writer, name string) error {
	r, err := snapshotfmt.Open(ctx, storage.LocalDir(dir))
	if err != nil {
		return err
	}
	defer r.Close()
	m := r.Metadata()
	for i, op := range m.Operators {
		for _, ref := range m.Refs(i) {
			segs, err := r.Segments(ctx, ref, keygroup.All(op.MaxParallelism))
			if err != nil {
				return err
			}
			var n uint64
			for _, seg := range segs {
				n += seg.Entries
			}
			label := m.RefName(ref)
			if ref.Timer {
				label = "timers " + label
			}
			fmt.Fprintf(w, "%s:   %s/%s: %d entries\n", name, op.UID, label, n)
		}
	}
	return nil
}

func dirSize(dir string) (files int, bytes int64, err error) {
	err = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files++
			bytes += info.Size()
		}
		return err
	})
	return files, bytes, err
}
