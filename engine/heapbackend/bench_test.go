package heapbackend_test

import (
	"fmt"
	"testing"

	"github.com/stateproc/stateproc/engine/heapbackend"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

const benchKeys = 100_000

// benchValue returns an int64 value state holding a value for each of
// 100,000 string keys, and the keys.
func benchValue(b *testing.B) (*heapbackend.Backend, state.ValueState[int64], [][]byte) {
	hb, err := heapbackend.New(heapbackend.Options{MaxParallelism: 128, KeyGroups: keygroup.All(128)})
	if err != nil {
		b.Fatal(err)
	}
	v, err := state.GetValue(hb, state.NewManualClock(0), state.NewValue("v", serializers.Int64()))
	if err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user-%06d", i))
		if err := hb.SetCurrentKey(keys[i]); err != nil {
			b.Fatal(err)
		}
		if err := v.Update(int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	return hb, v, keys
}

func BenchmarkValueGet(b *testing.B) {
	hb, v, keys := benchValue(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := hb.SetCurrentKey(keys[i%benchKeys]); err != nil {
			b.Fatal(err)
		}
		if _, ok, err := v.Value(); err != nil || !ok {
			b.Fatal(ok, err)
		}
		i++
	}
}

func BenchmarkValueUpdate(b *testing.B) {
	hb, v, keys := benchValue(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := hb.SetCurrentKey(keys[i%benchKeys]); err != nil {
			b.Fatal(err)
		}
		// Values above 255 are boxed by the handle: the allocation is the
		// caller's, inherent to Cell.Value being an interface.
		if err := v.Update(int64(i) + 1000); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
