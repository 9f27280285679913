package gateway_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
)

// GatewayMeter over an input without end, under DeterministicTime (the
// default), checkpoints on and on, and stops with a savepoint when asked.
// Its price source ends after three updates, and sends a barrier at every
// checkpoint on a channel whose watermark, at the end, is ahead of every
// other: unless the keyed subtasks read it all the same, the channel
// fills after a few checkpoints and no checkpoint completes again.
func TestCheckpointsGoOnAfterTheBroadcastSourceEnds(t *testing.T) {
	cfg := gateway.Config{Seed: 1, Events: 0, Parallelism: 2}
	src, err := gateway.NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	j, err := gateway.Build(cfg, src, src.Prices(), gateway.Sinks{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h, err := engine.Start(context.Background(), j, engine.RunOptions{Backend: engine.Heap, ProcessingTime: engine.DeterministicTime,
		CheckpointDir: filepath.Join(dir, "chk"), CheckpointInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { h.Cancel(); h.Wait() }()
	const want = 20
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		latest := h.LatestCheckpoint()
		n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(latest), "chk-"))
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the latest checkpoint is %q after 30 s of checkpoints every 10ms, want chk-%d at least", filepath.Base(latest), want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.StopWithSavepoint(ctx, filepath.Join(dir, "sp"), false); err != nil {
		t.Fatalf("StopWithSavepoint: %v", err)
	}
}
