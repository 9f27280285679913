package evolve_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// The test job writes, for each of its keys, a value state, a list state of
// two elements and a map state of two entries, all of Avro values; then,
// restored, it reads them back and emits what it read. Its input is one
// split of 2n records: n writes, one per key, then n reads.
const t0 = int64(1_700_000_000_000)

// jobSchemas are the Avro schemas of one build of the test job, and its
// other choices.
type jobSchemas struct {
	key, mapKey, value string
	ttl                bool
	// uid of the keyed operator: "op" when empty.
	uid string
	// maxP fixes its max parallelism; 0 leaves it to the engine.
	maxP, parallelism int
	// noMap leaves the map state out; mapAsValue declares a value state
	// under its name instead; extra adds a value state "extra"; listNS gives
	// the list state an int64 namespace.
	noMap, mapAsValue, extra, listNS bool
}

// jobInput is what the writes put into state: per key i, value i, list
// [i, i+1] and map {mapKey i: i, mapKey i+1: i+1}, indexes modulo n.
type jobInput struct {
	keys, mapKeys, values []any
}

type record struct {
	i    int
	read bool
}

// readBack is what a read emits for one key.
type readBack struct {
	Key      any
	Value    any
	HasValue bool
	List     []any
	Map      [][2]any
}

type inputSource struct {
	n int
}

func (s inputSource) Splits() int { return 1 }

func (s inputSource) Open(ctx context.Context, _ int, offset int64) (engine.SplitReader[record], error) {
	return &inputReader{n: s.n, pos: int(offset)}, nil
}

type inputReader struct{ n, pos int }

func (r *inputReader) Next(ctx context.Context) (record, int64, bool, error) {
	if r.pos >= 2*r.n {
		return record{}, 0, false, nil
	}
	rec := record{i: r.pos % r.n, read: r.pos >= r.n}
	r.pos++
	return rec, t0 + int64(r.pos), true, nil
}

type caseFn struct {
	in      jobInput
	descs   descriptors
	value   state.ValueState[any]
	list    state.ListState[any]
	entries state.MapState[any, any]
}

type descriptors struct {
	value *state.ValueDescriptor[any]
	list  *state.ListDescriptor[any]
	m     *state.MapDescriptor[any, any] // nil without a map state
}

func (f *caseFn) Open(ctx *engine.OpenContext) (err error) {
	if f.value, err = engine.GetValue(ctx, f.descs.value); err != nil {
		return err
	}
	if f.list, err = engine.GetList(ctx, f.descs.list); err != nil {
		return err
	}
	if f.descs.m != nil {
		f.entries, err = engine.GetMap(ctx, f.descs.m)
	}
	return err
}

func (f *caseFn) ProcessElement(ctx *engine.Context[any, readBack], r record) error {
	if r.read {
		return f.read(ctx)
	}
	n := len(f.in.keys)
	next := (r.i + 1) % n
	if err := f.value.Update(f.in.values[r.i]); err != nil {
		return err
	}
	if err := f.list.AddAll([]any{f.in.values[r.i], f.in.values[next]}); err != nil {
		return err
	}
	if f.entries == nil {
		return nil
	}
	if err := f.entries.Put(f.in.mapKeys[r.i], f.in.values[r.i]); err != nil {
		return err
	}
	return f.entries.Put(f.in.mapKeys[next], f.in.values[next])
}

func (f *caseFn) read(ctx *engine.Context[any, readBack]) error {
	out := readBack{Key: ctx.Key()}
	var err error
	if out.Value, out.HasValue, err = f.value.Value(); err != nil {
		return err
	}
	if out.List, err = f.list.Get(); err != nil {
		return err
	}
	if f.entries == nil {
		return ctx.Emit(out)
	}
	err = f.entries.Range(func(k, v any) bool {
		out.Map = append(out.Map, [2]any{k, v})
		return true
	})
	if err != nil {
		return err
	}
	return ctx.Emit(out)
}

func (f *caseFn) OnTimer(*engine.Context[any, readBack], engine.TimerInfo) error { return nil }

func mustGeneric(t testing.TB, schema string) serializers.Of[any] {
	t.Helper()
	s, err := serializers.AvroGeneric(schema)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// buildJob builds the test job with the schemas s; in supplies the writes
// (its keys also the key of each read).
func buildJob(t testing.TB, s jobSchemas, in jobInput, sink engine.Sink[readBack]) *engine.Job {
	t.Helper()
	var opts []state.Option
	if s.ttl {
		opts = append(opts, state.WithTTL(ttl.New(7*24*time.Hour)))
	}
	val := mustGeneric(t, s.value)
	listOpts := opts
	if s.listNS {
		listOpts = append(slices.Clip(opts), state.WithNamespace(serializers.Int64()))
	}
	descs := descriptors{
		value: state.NewValue("value", val, opts...),
		list:  state.NewList("list", val, listOpts...),
	}
	declared := []state.Descriptor{descs.value, descs.list}
	switch {
	case s.mapAsValue:
		declared = append(declared, state.NewValue("map", val, opts...))
	case !s.noMap:
		descs.m = state.NewMap("map", mustGeneric(t, s.mapKey), val, opts...)
		declared = append(declared, descs.m)
	}
	if s.extra {
		declared = append(declared, state.NewValue("extra", serializers.Int64()))
	}
	uid, parallelism := cmp.Or(s.uid, "op"), cmp.Or(s.parallelism, 2)
	keyedOpts := []engine.OperatorOption{engine.UID(uid), engine.Parallelism(parallelism), engine.WithState(declared...)}
	if s.maxP > 0 {
		keyedOpts = append(keyedOpts, engine.MaxParallelism(s.maxP))
	}
	j := engine.NewJob("evolve-case", engine.DefaultParallelism(2))
	src := engine.FromSource(j, inputSource{n: len(in.keys)}, engine.Watermarks{}, engine.UID("input"))
	keyed := engine.KeyBy(src, func(r record) any { return in.keys[r.i] }, mustGeneric(t, s.key))
	out := engine.Process(keyed, func() engine.KeyedProcessFunction[any, record, readBack] { return &caseFn{in: in, descs: descs} }, keyedOpts...)
	engine.ToSink(out, sink, engine.UID("sink"))
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	return j
}

// writeSavepoint runs the writes of the job with schemas s and stops with a
// savepoint in dir.
func writeSavepoint(t testing.TB, s jobSchemas, in jobInput, backend engine.BackendKind, dir string) {
	t.Helper()
	_, err := engine.Run(context.Background(), buildJob(t, s, in, engine.NewCollectSink[readBack]()),
		engine.RunOptions{Backend: backend, StopAfter: int64(len(in.keys)), SavepointDir: dir})
	if err != nil {
		t.Fatalf("writing the savepoint: %v", err)
	}
}

// restoreAndRead restores the savepoint in dir into the job with schemas s
// and returns what its reads emit, by key, or the engine's error.
func restoreAndRead(t testing.TB, s jobSchemas, in jobInput, backend engine.BackendKind, dir string) (map[string]readBack, error) {
	t.Helper()
	sink := engine.NewCollectSink[readBack]()
	if _, err := engine.Run(context.Background(), buildJob(t, s, in, sink), engine.RunOptions{Backend: backend, RestoreFrom: dir}); err != nil {
		return nil, err
	}
	got := map[string]readBack{}
	for _, r := range sink.Values() {
		got[fmt.Sprint(r.Key)] = r
	}
	return got, nil
}
