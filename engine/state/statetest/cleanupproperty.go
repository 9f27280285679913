package statetest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// testCleanupKeepsWhatReadsSee checks, over random interleavings, that no
// cleanup (on read, incremental, the sweeper, full snapshots) removes an
// entry that a read by its own key could still return: with a clock that
// never goes back, every read of a value, a list and a map with every
// cleanup on returns what a model that never cleans up returns, under both
// update types. Between steps the clock advances by a random fraction of
// the TTL, often by nothing, so that cleanups and reads come at the very
// time entries expire.
func testCleanupKeepsWhatReadsSee(t *testing.T, newBackend Factory) {
	for _, update := range []ttl.UpdateType{ttl.OnCreateAndWrite, ttl.OnReadAndWrite} {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("%v/seed-%d", update, seed), func(t *testing.T) {
				cfg := ttl.Config{TTL: d, Update: update, Visibility: ttl.NeverReturnExpired,
					CleanupFullSnapshot: true, CleanupIncremental: 3, SweepBudget: 5}
				p := newCleanupProperty(t, newBackend, cfg, seed)
				p.run(3000)
			})
		}
	}
}

// cleanupProperty is one run: the backend under test and the model.
type cleanupProperty struct {
	t          *testing.T
	newBackend Factory
	cfg        ttl.Config
	rng        *rand.Rand
	f          *fixture
	specs      []*state.Spec
	v          state.ValueState[int64]
	l          state.ListState[int64]
	m          state.MapState[string, int64]
	model      map[string]*modelKey
	reads      int
}

// modelKey is what one key holds, every entry with its last-modified time.
type modelKey struct {
	value *modelCell
	list  []modelCell
	m     map[string]modelCell
}

type modelCell struct {
	v, at int64
}

var (
	propValue = func(cfg ttl.Config) *state.ValueDescriptor[int64] {
		return state.NewValue("v", serializers.Int64(), state.WithTTL(cfg))
	}
	propList = func(cfg ttl.Config) *state.ListDescriptor[int64] {
		return state.NewList("l", serializers.Int64(), state.WithTTL(cfg))
	}
	propMap = func(cfg ttl.Config) *state.MapDescriptor[string, int64] {
		return state.NewMap("m", serializers.String(), serializers.Int64(), state.WithTTL(cfg))
	}
)

func newCleanupProperty(t *testing.T, newBackend Factory, cfg ttl.Config, seed uint64) *cleanupProperty {
	p := &cleanupProperty{t: t, newBackend: newBackend, cfg: cfg, rng: rand.New(rand.NewPCG(seed, 0x5eed)), model: map[string]*modelKey{}}
	p.open(newFixture(t, newBackend))
	return p
}

func (p *cleanupProperty) open(f *fixture) {
	p.f = f
	vd, ld, md := propValue(p.cfg), propList(p.cfg), propMap(p.cfg)
	p.specs = []*state.Spec{vd.Spec(), ld.Spec(), md.Spec()}
	p.v, p.l, p.m = valueOf(f, vd), listOf(f, ld), mapOf(f, md)
}

func (p *cleanupProperty) live(c modelCell) bool { return !p.cfg.Expired(c.at, p.f.clock.Now()) }

func (p *cleanupProperty) run(steps int) {
	t := p.t
	const keys = 40
	for step := range steps {
		switch r := p.rng.IntN(100); {
		case r < 40:
			p.f.at(p.f.clock.Now() + [...]int64{0, 0, 1, dms / 10, dms / 3, dms - 1, dms}[p.rng.IntN(7)])
		case r < 97:
			k := fmt.Sprintf("key-%d", p.rng.IntN(keys))
			p.f.key(k)
			p.op(k, p.rng.IntN(6), int64(step))
		case r < 99:
			if sw, ok := p.f.b.(state.Sweeper); ok {
				_, err := sw.Sweep(p.f.clock.Now())
				must(t, err)
			}
		default:
			// Full-snapshot cleanup drops what is expired at now, and the
			// job goes on, from the savepoint, in a new backend.
			now := p.f.clock.Now()
			op := NewOperator("prop", 1, maxP, serializers.String(), p.specs, nil)
			r := WriteSavepoint(t, tempDir(t, "sp"), NewMetadata(op, now), now, p.f.b)
			next := newFixture(t, p.newBackend)
			p.open(next)
			Restore(t, next.b, r, state.RestoreOptions{Now: now})
			next.at(now)
		}
	}
	if p.reads < steps/4 {
		t.Fatalf("only %d reads in %d steps", p.reads, steps)
	}
	// The model drops an expired entry only when its own key reads it; the
	// backend must have dropped more, or no cleanup was put to the test.
	modelled := 0
	for _, mk := range p.model {
		if mk.value != nil {
			modelled++
		}
		modelled += len(mk.list) + len(mk.m)
	}
	stored := 0
	for _, n := range counts(t, snapshot(p.f, p.specs, beforeAnyExpiry), len(p.specs)) {
		stored += n
	}
	if stored >= modelled {
		t.Fatalf("the backend holds %d entries, the model %d: no background cleanup happened", stored, modelled)
	}
}

// beforeAnyExpiry is a snapshot time at which nothing is expired.
const beforeAnyExpiry = -1 << 63

// op applies operation op to key k in both the backend and the model,
// checking every read against the model.
func (p *cleanupProperty) op(k string, op int, v int64) {
	t := p.t
	mk := p.model[k]
	if mk == nil {
		mk = &modelKey{m: map[string]modelCell{}}
		p.model[k] = mk
	}
	now := p.f.clock.Now()
	refresh := p.cfg.Update == ttl.OnReadAndWrite
	switch op {
	case 0:
		must(t, p.v.Update(v))
		mk.value = &modelCell{v, now}
	case 1:
		must(t, p.l.Add(v))
		mk.list = append(mk.list, modelCell{v, now})
	case 2:
		mapKey := fmt.Sprintf("m%d", v%7)
		must(t, p.m.Put(mapKey, v))
		mk.m[mapKey] = modelCell{v, now}
	case 3:
		p.reads++
		want := none[int64]()
		if mk.value != nil && p.live(*mk.value) {
			want = some(mk.value.v)
			if refresh {
				mk.value.at = now
			}
		}
		p.check(k, "value", readValue(t, p.v), want)
	case 4:
		p.reads++
		var want []int64
		kept := mk.list[:0]
		for _, c := range mk.list {
			if p.live(c) {
				want = append(want, c.v)
				if refresh {
					c.at = now
				}
				kept = append(kept, c)
			}
		}
		mk.list = kept
		p.check(k, "list", readList(t, p.l), want)
	case 5:
		p.reads++
		var want []kv[string, int64]
		for _, mapKey := range slices.Sorted(maps.Keys(mk.m)) {
			c := mk.m[mapKey]
			if !p.live(c) {
				delete(mk.m, mapKey)
				continue
			}
			want = append(want, kv[string, int64]{mapKey, c.v})
			if refresh {
				mk.m[mapKey] = modelCell{c.v, now}
			}
		}
		p.check(k, "map", readMap(t, p.m), want)
	}
}

func (p *cleanupProperty) check(k, what string, got, want any) {
	p.t.Helper()
	eq(p.t, fmt.Sprintf("%s of %s at %d", what, k, p.f.clock.Now()-t0), got, want)
}
