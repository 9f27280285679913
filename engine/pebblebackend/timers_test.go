package pebblebackend

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

type refTimer struct {
	ts      int64
	key, ns string
}

func compareRefTimers(a, b refTimer) int {
	return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.key, b.key), cmp.Compare(a.ns, b.ns))
}

// TestTimersOrderAcrossKeyGroups registers, re-registers and deletes timers
// of keys spread over many key groups and checks that they fire exactly once
// each, in (time, key, namespace) order, against a sorted reference.
func TestTimersOrderAcrossKeyGroups(t *testing.T) {
	for _, kgs := range []keygroup.Range{keygroup.All(128), {Start: 40, End: 90}} {
		t.Run(kgs.String(), func(t *testing.T) {
			b := newTestBackend(t, 128, kgs)
			ts, err := b.Timers("event-time", serializers.Void())
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for i := 0; len(keys) < 40; i++ {
				k := fmt.Sprintf("k%d", i)
				if kgs.Contains(keygroup.Of([]byte(k), 128)) {
					keys = append(keys, k)
				}
			}
			r := rand.New(rand.NewPCG(5, 6))
			ref := map[refTimer]bool{}
			for i := 0; i < 400; i++ {
				tm := refTimer{ts: int64(r.IntN(30) - 10), key: keys[r.IntN(len(keys))], ns: []string{"", "\x00", "w"}[r.IntN(3)]}
				setKey(t, b, tm.key)
				if r.IntN(4) == 0 {
					if err := ts.Delete([]byte(tm.ns), tm.ts); err != nil {
						t.Fatal(err)
					}
					delete(ref, tm)
					continue
				}
				if err := ts.Register([]byte(tm.ns), tm.ts); err != nil {
					t.Fatal(err)
				}
				ref[tm] = true
			}
			want := make([]refTimer, 0, len(ref))
			for tm := range ref {
				want = append(want, tm)
			}
			slices.SortFunc(want, compareRefTimers)

			earliest, ok, err := ts.Earliest()
			if err != nil || !ok || earliest != want[0].ts {
				t.Fatalf("Earliest() = %d, %v, %v; want %d", earliest, ok, err, want[0].ts)
			}
			var got []refTimer
			pop := func(upTo int64) {
				for {
					tm, ok, err := ts.Pop(upTo)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						return
					}
					if tm.Timestamp > upTo {
						t.Fatalf("Pop(%d) returned a timer at %d", upTo, tm.Timestamp)
					}
					got = append(got, refTimer{tm.Timestamp, string(tm.Key), string(tm.Namespace)})
				}
			}
			pop(0)
			if n := len(got); n == 0 || n == len(want) {
				t.Fatalf("Pop(0) fired %d of %d timers; the test wants some on both sides", n, len(want))
			}
			pop(math.MaxInt64)
			if !slices.Equal(got, want) {
				t.Fatalf("fired\n%v\nwant\n%v", got, want)
			}
			if _, ok, _ := ts.Earliest(); ok {
				t.Fatal("Earliest reports a timer after every timer fired")
			}
			if k := dbKeys(t, b, nil); len(k) != 0 {
				t.Fatalf("%d keys left in the database, first %x", len(k), k[0])
			}
		})
	}
}

// TestTimerDeleteOfHead deletes the first timer of a key group, which makes
// the backend re-read that key group's head from the database.
func TestTimerDeleteOfHead(t *testing.T) {
	b := newTestBackend(t, 128, keygroup.All(128))
	ts, err := b.Timers("t", serializers.Void())
	if err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "a")
	for _, at := range []int64{10, 20, 30} {
		if err := ts.Register(nil, at); err != nil {
			t.Fatal(err)
		}
	}
	setKey(t, b, "b")
	if err := ts.Register(nil, 25); err != nil {
		t.Fatal(err)
	}
	setKey(t, b, "a")
	for _, step := range []struct {
		del  int64
		want int64
	}{{10, 20}, {20, 25}} {
		if err := ts.Delete(nil, step.del); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := ts.Earliest(); err != nil || !ok || got != step.want {
			t.Fatalf("after deleting %d: Earliest() = %d, %v, %v; want %d", step.del, got, ok, err, step.want)
		}
	}
	tm, ok, err := ts.Pop(100)
	if err != nil || !ok || tm.Timestamp != 25 || !bytes.Equal(tm.Key, []byte("b")) {
		t.Fatalf("Pop = %+v, %v, %v; want b at 25", tm, ok, err)
	}
	tm, ok, err = ts.Pop(100)
	if err != nil || !ok || tm.Timestamp != 30 || !bytes.Equal(tm.Key, []byte("a")) {
		t.Fatalf("Pop = %+v, %v, %v; want a at 30", tm, ok, err)
	}
}

// TestTimersAgainstModel mixes registers, deletes and pops on few key
// groups, so that each holds many more timers than the backend keeps in
// memory, and compares every pop and Earliest with a sorted model.
func TestTimersAgainstModel(t *testing.T) {
	b := newTestBackend(t, 4, keygroup.All(4))
	ts, err := b.Timers("t", serializers.Void())
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	var model []refTimer
	now := int64(0)
	for step := range 20_000 {
		key := fmt.Sprintf("k%d", rnd.IntN(40))
		setKey(t, b, key)
		switch op := rnd.IntN(10); {
		case op < 5:
			r := refTimer{ts: now + rnd.Int64N(200), key: key, ns: ""}
			if err := ts.Register(nil, r.ts); err != nil {
				t.Fatal(err)
			}
			if i, found := slices.BinarySearchFunc(model, r, compareRefTimers); !found {
				model = slices.Insert(model, i, r)
			}
		case op < 7:
			r := refTimer{ts: now + rnd.Int64N(200), key: key, ns: ""}
			if err := ts.Delete(nil, r.ts); err != nil {
				t.Fatal(err)
			}
			if i, found := slices.BinarySearchFunc(model, r, compareRefTimers); found {
				model = slices.Delete(model, i, i+1)
			}
		default:
			now += rnd.Int64N(10)
			tm, ok, err := ts.Pop(now)
			if err != nil {
				t.Fatal(err)
			}
			wantOK := len(model) > 0 && model[0].ts <= now
			if ok != wantOK {
				t.Fatalf("step %d: Pop(%d) fired %v, want %v", step, now, ok, wantOK)
			}
			if ok {
				got := refTimer{ts: tm.Timestamp, key: string(tm.Key), ns: string(tm.Namespace)}
				if got != model[0] {
					t.Fatalf("step %d: Pop fired %v, want %v", step, got, model[0])
				}
				model = model[1:]
			}
		}
		e, ok, err := ts.Earliest()
		if err != nil || ok != (len(model) > 0) || (ok && e != model[0].ts) {
			t.Fatalf("step %d: Earliest() = %d, %v, %v with %d timers", step, e, ok, err, len(model))
		}
	}
	if len(model) < 3*headsCap {
		t.Fatalf("only %d timers pending at the end: the test does not exceed what is held", len(model))
	}
}
