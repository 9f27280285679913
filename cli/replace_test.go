package cli_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stateproc/stateproc/cli"
)

// Commands that read a local savepoint while forced rewrites replace it
// over and over read the savepoint whose _metadata they read, or fail as
// reads of a savepoint that changed (exit 1, to be run again): never as
// reads of a damaged one (exit 4). The rewrites alternate between two max
// parallelisms, so that the two savepoints name different data files.
func TestReadersOfASavepointReplacedByForce(t *testing.T) {
	in, err := filepath.Abs("../testdata/savepoints/v2/gateway-p2-pebble")
	if err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(t.TempDir(), "sp")
	rewrite := func(maxP int) {
		t.Helper()
		if _, stderr, code := runCLI(t, "rescale", in, "--max-parallelism", fmt.Sprint(maxP), "--out", sp, "--force"); code != cli.ExitOK {
			t.Fatalf("rescale --force: exit %d: %s", code, stderr)
		}
	}
	rewrite(256)
	const rewrites = 24
	readers := [][]string{{"inspect", sp}, {"verify", sp}, {"inspect", "--scan", sp}}
	var stop atomic.Bool
	var reads, replaced atomic.Int64
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for _, args := range readers {
		wg.Go(func() {
			for !stop.Load() {
				_, stderr, code := runCLI(t, args...)
				reads.Add(1)
				switch {
				case code == cli.ExitOK:
				case code == cli.ExitFailure && strings.Contains(stderr, "was replaced or removed"):
					replaced.Add(1)
				default:
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: exit %d: %s", strings.Join(args, " "), code, stderr))
					mu.Unlock()
				}
			}
		})
	}
	for i := range rewrites {
		rewrite(512 >> (i % 2))
	}
	stop.Store(true)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d reads during %d forced rewrites, %d told to run again", reads.Load(), rewrites, replaced.Load())
}
