package pebblebackend

import (
	"testing"

	"github.com/stateproc/stateproc/engine/heapbackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/engine/state/statetest"
	"github.com/stateproc/stateproc/keygroup"
)

func pebbleFactory(t testing.TB, kgs keygroup.Range, maxP int) state.Backend {
	return newTestBackend(t, maxP, kgs)
}

func heapFactory(t testing.TB, kgs keygroup.Range, maxP int) state.Backend {
	b, err := heapbackend.New(heapbackend.Options{MaxParallelism: maxP, KeyGroups: kgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) { statetest.Run(t, pebbleFactory) }

func TestCrossBackend(t *testing.T) {
	t.Run("HeapToPebble", func(t *testing.T) { statetest.RunCross(t, heapFactory, pebbleFactory) })
	t.Run("PebbleToHeap", func(t *testing.T) { statetest.RunCross(t, pebbleFactory, heapFactory) })
}
