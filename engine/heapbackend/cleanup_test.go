package heapbackend

import (
	"fmt"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

func ttlSpec(name string) *state.Spec {
	return state.NewValue(name, serializers.Int64(), state.WithTTL(ttl.Config{
		TTL: time.Second, Update: ttl.OnCreateAndWrite, Visibility: ttl.NeverReturnExpired, CleanupIncremental: 5,
	})).Spec()
}

// TestEveryStoreCleansIncrementally makes sure the conformance suite does
// not skip its incremental cleanup tests on the heap.
func TestEveryStoreCleansIncrementally(t *testing.T) {
	b, err := New(Options{MaxParallelism: 128, KeyGroups: keygroup.All(128)})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := b.RegisterValue(ttlSpec("v"))
	l, _ := b.RegisterList(state.NewList("l", serializers.Int64()).Spec())
	m, _ := b.RegisterMap(state.NewMap("m", serializers.Int64(), serializers.Int64()).Spec())
	for _, s := range []any{v, l, m} {
		if _, ok := s.(state.IncrementalCleaner); !ok {
			t.Errorf("%T does not implement state.IncrementalCleaner", s)
		}
	}
}

// TestCleanupCostIsBounded checks that each call examines exactly its budget,
// whether the state is one entry among 32768 otherwise empty key groups or
// 100,000 entries.
func TestCleanupCostIsBounded(t *testing.T) {
	b, err := New(Options{MaxParallelism: 32768, KeyGroups: keygroup.All(32768)})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.RegisterValue(ttlSpec("v"))
	if err != nil {
		t.Fatal(err)
	}
	s := raw.(*valueStore)
	put := func(k string) {
		if err := b.SetCurrentKey([]byte(k)); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(nil, state.Cell{Value: int64(1)}); err != nil {
			t.Fatal(err)
		}
	}
	put("only")
	for range 10 {
		examined := 0
		s.CleanupIncrementally(5, func(int64) bool { examined++; return false })
		if examined != 5 {
			t.Fatalf("a call with budget 5 on a state of one entry examined %d entries", examined)
		}
	}
	for i := range 100_000 {
		put(fmt.Sprintf("key-%d", i))
	}
	for range 1000 {
		examined := 0
		s.CleanupIncrementally(5, func(int64) bool { examined++; return false })
		if examined != 5 {
			t.Fatalf("a call with budget 5 examined %d entries", examined)
		}
	}
}
