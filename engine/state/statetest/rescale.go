package statetest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

// subtasks returns the job's handles on p new backends, subtask i owning
// its key-group range under maxParallelism, sharing clock.
func subtasks(t testing.TB, newBackend Factory, j *job, p, maxParallelism int, clock *state.ManualClock) []*jobState {
	out := make([]*jobState, p)
	for i := range out {
		b := newBackend(t, keygroup.ForSubtask(i, p, maxParallelism), maxParallelism)
		out[i] = j.open(&fixture{t: t, b: b, clock: clock})
	}
	return out
}

func backends(states []*jobState) []state.Backend {
	out := make([]state.Backend, len(states))
	for i, s := range states {
		out[i] = s.f.b
	}
	return out
}

// owner returns the subtask of parallelism p that owns key.
func owner(key []byte, p, maxParallelism int) int {
	return keygroup.Subtask(keygroup.Of(key, maxParallelism), p, maxParallelism)
}

// testRescale writes a savepoint from four subtasks and restores it at
// parallelism 1, 3 and 7: every key must be on its new owner with all its
// state, every entry must be restored exactly once, and every timer must
// fire exactly once, on the owner of its key.
func testRescale(t *testing.T, newBackend Factory) {
	stringKeys := make([][]byte, 3000)
	for i := range stringKeys {
		stringKeys[i] = userKey(i)
	}
	int64Keys := make([][]byte, 2000)
	for i := range int64Keys {
		int64Keys[i] = int64Key(int64(i)*7919 - 5_000_000)
	}
	int64Keys = append(int64Keys, int64Key(math.MinInt64), int64Key(math.MaxInt64))
	cases := []struct {
		name string
		maxP int
		ser  serializers.Serializer
		keys [][]byte
	}{
		{"String/MaxP128", 128, serializers.String(), stringKeys},
		{"String/MaxP720", 720, serializers.String(), stringKeys},
		{"Int64/MaxP128", 128, serializers.Int64(), int64Keys},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { rescale(t, newBackend, c.maxP, c.ser, c.keys) })
	}
}

func rescale(t *testing.T, newBackend Factory, maxParallelism int, keySer serializers.Serializer, keys [][]byte) {
	j := newJob()
	clock := state.NewManualClock(t0)
	src := subtasks(t, newBackend, j, 4, maxParallelism, clock)
	var timers []state.Timer
	for i, k := range keys {
		src[owner(k, 4, maxParallelism)].write(i, k, false)
		timers = append(timers, jobTimersOf(t, i, k)...)
	}
	slices.SortFunc(timers, compareTimers)

	now := t0 + 1000
	clock.Set(now)
	meta := NewMetadata(j.operator(4, maxParallelism, keySer), now)
	r := WriteSavepoint(t, tempDir(t, "p4"), meta, now, backends(src)...)
	keysSaved := 0
	for _, seg := range sptest.Segments(t, r, nth(r, 0, 0)) { // count has a value for every key
		keysSaved += int(seg.Keys)
	}
	eq(t, "keys in the savepoint", keysSaved, len(keys))
	want := Dump(t, r, 0)

	for _, p := range []int{1, 3, 7} {
		t.Run(fmt.Sprintf("Parallelism%d", p), func(t *testing.T) {
			dst := subtasks(t, newBackend, j, p, maxParallelism, clock)
			for _, s := range dst {
				Restore(t, s.f.b, r, state.RestoreOptions{Now: now})
			}
			for i, k := range keys {
				dst[owner(k, p, maxParallelism)].check(i, k)
			}

			// Snapshotting the restored subtasks gives every entry back,
			// once: an entry restored twice or not at all changes the dump.
			again := WriteSavepoint(t, tempDir(t, "again"), NewMetadata(j.operator(p, maxParallelism, keySer), now), now, backends(dst)...)
			SameDump(t, Dump(t, again, 0), want)

			var fired []state.Timer
			for i, s := range dst {
				for {
					tm := pop(t, s.timers, math.MaxInt64)
					if !tm.OK {
						break
					}
					if o := owner(tm.V.Key, p, maxParallelism); o != i {
						t.Fatalf("subtask %d fired a timer of key %x, owned by subtask %d", i, tm.V.Key, o)
					}
					fired = append(fired, tm.V)
				}
			}
			slices.SortFunc(fired, compareTimers)
			eq(t, "timers fired after restore", len(fired), len(timers))
			for i := range fired {
				if compareTimers(fired[i], timers[i]) != 0 {
					t.Fatalf("timer %d fired as %+v, want %+v", i, fired[i], timers[i])
				}
			}
		})
	}
}
