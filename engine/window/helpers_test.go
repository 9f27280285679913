package window

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/serializers"
)

// event is what the test sources emit: N counts records, V sums a value.
type event struct {
	Key string `avro:"key"`
	TS  int64  `avro:"ts"`
	N   int64  `avro:"n"`
	V   int64  `avro:"v"`
}

var eventSer = func() serializers.Of[event] {
	s, err := serializers.Avro[event](`{"type":"record","name":"Event","fields":[
 {"name":"key","type":"string"},{"name":"ts","type":"long"},{"name":"n","type":"long"},{"name":"v","type":"long"}]}`)
	if err != nil {
		panic(err)
	}
	return s
}()

// source has splits of n events each, in time order within a split;
// event i of split s has key k<(i*7+s)%keys>, time i*10+s*3 plus a pause
// of 700 ms every 150 records, so that sessions end, and value i%13+1.
type source struct{ splits, n, keys int }

func (s source) event(split, i int) event {
	return event{Key: fmt.Sprintf("k%d", (i*7+split)%s.keys), TS: int64(i*10+split*3) + int64(i/150)*700, N: 1, V: int64(i%13 + 1)}
}

func (s source) Splits() int { return s.splits }

func (s source) Open(ctx context.Context, split int, offset int64) (engine.SplitReader[event], error) {
	return &reader{s: s, split: split, i: int(offset)}, nil
}

func (s source) all() []event {
	var out []event
	for sp := 0; sp < s.splits; sp++ {
		for i := 0; i < s.n; i++ {
			out = append(out, s.event(sp, i))
		}
	}
	return out
}

type reader struct {
	s     source
	split int
	i     int
}

func (r *reader) Next(ctx context.Context) (event, int64, bool, error) {
	if r.i >= r.s.n {
		return event{}, 0, false, nil
	}
	e := r.s.event(r.split, r.i)
	r.i++
	return e, e.TS, true, nil
}

// listSource emits the given events in order, as one split.
type listSource []event

func (l listSource) Splits() int { return 1 }

func (l listSource) Open(_ context.Context, _ int, offset int64) (engine.SplitReader[event], error) {
	return &listReader{l: l, i: int(offset)}, nil
}

type listReader struct {
	l listSource
	i int
}

func (r *listReader) Next(ctx context.Context) (event, int64, bool, error) {
	if r.i >= len(r.l) {
		return event{}, 0, false, nil
	}
	e := r.l[r.i]
	r.i++
	return e, e.TS, true, nil
}

// result is one window's output.
type result struct {
	Key        string
	Start, End int64
	N, V       int64
}

func (r result) String() string {
	return fmt.Sprintf("%s[%d,%d)=%d/%d", r.Key, r.Start, r.End, r.N, r.V)
}

func sorted(rs []result) []result {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b result) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End), cmp.Compare(a.N, b.N), cmp.Compare(a.V, b.V))
	})
	return rs
}

// sums is the aggregate function of the tests: its accumulator, a pair of
// its own serializer, counts and sums.
type sums struct{}

type acc struct {
	N int64 `avro:"n"`
	V int64 `avro:"v"`
}

var accSer = func() serializers.Of[acc] {
	s, err := serializers.Avro[acc](`{"type":"record","name":"Acc","fields":[{"name":"n","type":"long"},{"name":"v","type":"long"}]}`)
	if err != nil {
		panic(err)
	}
	return s
}()

func (sums) Create() acc            { return acc{} }
func (sums) Add(e event, a acc) acc { return acc{N: a.N + e.N, V: a.V + e.V} }
func (sums) Result(a acc) acc       { return a }
func (sums) Merge(a, b acc) acc     { return acc{N: a.N + b.N, V: a.V + b.V} }
func reduceEvents(a, b event) event {
	return event{Key: a.Key, TS: max(a.TS, b.TS), N: a.N + b.N, V: a.V + b.V}
}
func keyOf(e event) string { return e.Key }
func resultOf(k string, w Window, n, v int64) result {
	return result{Key: k, Start: w.Start, End: w.End, N: n, V: v}
}

// fnKind is how a test window computes its result.
type fnKind string

const (
	reduceFn    fnKind = "reduce"
	aggregateFn fnKind = "aggregate"
	processFn   fnKind = "process"
)

var fnKinds = []fnKind{reduceFn, aggregateFn, processFn}

// apply ends ws in the function kind f, each giving the same results.
func apply(ws Stream[string, event], f fnKind, opts ...engine.OperatorOption) engine.Stream[result] {
	switch f {
	case reduceFn:
		return ReduceWith(ws, reduceEvents, eventSer, func(ctx *Context[string, result], e event) error {
			return ctx.Emit(resultOf(ctx.Key(), ctx.Window(), e.N, e.V))
		}, opts...)
	case aggregateFn:
		return AggregateWith(ws, AggregateFunction[event, acc, acc](sums{}), accSer, func(ctx *Context[string, result], a acc) error {
			return ctx.Emit(resultOf(ctx.Key(), ctx.Window(), a.N, a.V))
		}, opts...)
	}
	return Process(ws, eventSer, func(ctx *Context[string, result], es []event) error {
		var n, v int64
		for _, e := range es {
			n, v = n+e.N, v+e.V
		}
		return ctx.Emit(resultOf(ctx.Key(), ctx.Window(), n, v))
	}, opts...)
}

// expected computes, without the engine, what event-time windows of a
// emit for events none of which is late.
func expected(a Assigner, events []event) []result {
	type kw struct {
		k string
		w Window
	}
	if !a.Merging() {
		m := map[kw]*result{}
		for _, e := range events {
			for _, w := range a.Assign(nil, e.TS, 0) {
				r := m[kw{e.Key, w}]
				if r == nil {
					r = &result{Key: e.Key, Start: w.Start, End: w.End}
					m[kw{e.Key, w}] = r
				}
				r.N, r.V = r.N+e.N, r.V+e.V
			}
		}
		var out []result
		for _, r := range m {
			out = append(out, *r)
		}
		return sorted(out)
	}
	byKey := map[string][]event{}
	for _, e := range events {
		byKey[e.Key] = append(byKey[e.Key], e)
	}
	var out []result
	for k, es := range byKey {
		slices.SortFunc(es, func(a, b event) int { return cmp.Compare(a.TS, b.TS) })
		var cur *result
		for _, e := range es {
			w := a.Assign(nil, e.TS, 0)[0]
			if cur != nil && w.Start <= cur.End {
				cur.End = max(cur.End, w.End)
			} else {
				if cur != nil {
					out = append(out, *cur)
				}
				cur = &result{Key: k, Start: w.Start, End: w.End}
			}
			cur.N, cur.V = cur.N+e.N, cur.V+e.V
		}
		out = append(out, *cur)
	}
	return sorted(out)
}
