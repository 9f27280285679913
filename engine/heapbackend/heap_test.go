package heapbackend_test

import (
	"testing"

	"github.com/stateproc/stateproc/engine/heapbackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/keygroup"
)

func newHeap(t testing.TB, kgs keygroup.Range, maxParallelism int) state.Backend {
	b, err := heapbackend.New(heapbackend.Options{MaxParallelism: maxParallelism, KeyGroups: kgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) { statetest.Run(t, newHeap) }

func TestCross(t *testing.T) { statetest.RunCross(t, newHeap, newHeap) }
