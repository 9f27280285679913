package gateway

import (
	"context"
	"fmt"
	"math"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/internal/detgen"
)

// Source generates GatewayMeter's events: request i starts at about
// Epoch + i*StartEvery and belongs to split i % Splits; a request that is
// not abandoned completes 100 ms to 20 s later. Each split emits its starts
// and completions merged in event-time order, so no event is ever late with
// respect to its own split. Every field of a request is a pure function of
// (seed, i), and split s holds exactly detgen.Share(events, s, Splits)
// events, so that stopping the job after Events() records is the end of the
// input with every split paused on its last event.
//
// In the leak variant the last request of each split starts one TTL of
// `open` (and a minute) after the others and is never abandoned: at the end
// of the input every abandoned request's `open` entry is past its TTL.
//
// With no number of events the input has no end: its first n events are
// those of an input of n events but for the last few of each split, which
// an input with an end balances to its exact count.
type Source struct {
	seed  int64
	leak  bool
	plans [Splits]splitPlan
	// events, requests and abandoned count the whole input.
	events, requests, abandoned int64
}

// NewSource plans the input of cfg. It draws whether each request is
// abandoned once, which takes time linear in cfg.Events.
func NewSource(cfg Config) (*Source, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	s := &Source{seed: cfg.Seed, leak: cfg.Leak, events: cfg.Events}
	if cfg.Events == 0 {
		for split := range s.plans {
			s.plans[split] = splitPlan{body: math.MaxInt64}
		}
		return s, nil
	}
	for split := range s.plans {
		s.plans[split] = s.planSplit(split, detgen.Share(cfg.Events, split, Splits))
		s.requests += s.plans[split].requests()
		s.abandoned += s.plans[split].abandoned
	}
	return s, nil
}

// Splits is the number of splits.
func (s *Source) Splits() int { return Splits }

// Events is the number of events in the input, 0 when it has no end.
func (s *Source) Events() int64 { return s.events }

// Requests is the number of requests the input starts, 0 when it has no
// end.
func (s *Source) Requests() int64 { return s.requests }

// Abandoned is the number of requests that never complete, 0 when the
// input has no end.
func (s *Source) Abandoned() int64 { return s.abandoned }

// Open returns a reader of split positioned after offset events. It
// replays the split's first offset events, without building them, so it
// takes time linear in offset.
func (s *Source) Open(ctx context.Context, split int, offset int64) (engine.SplitReader[Event], error) {
	if split < 0 || split >= Splits {
		return nil, fmt.Errorf("gateway: split %d of %d", split, Splits)
	}
	r := &splitReader{src: s, split: split, n: s.plans[split].requests(),
		pending: detgen.NewHeap(64, func(a, b completion) bool {
			return a.ts < b.ts || a.ts == b.ts && a.index < b.index
		})}
	r.load()
	for k := int64(0); k < offset; k++ {
		if _, _, _, ok := r.step(); !ok {
			return nil, fmt.Errorf("gateway: split %d has fewer than %d events", split, offset)
		}
	}
	return r, nil
}

// completion is a pending RequestCompleted.
type completion struct{ ts, index int64 }

type splitReader struct {
	src   *Source
	split int
	n     int64 // requests in the split
	j     int64 // local index of the next request to start
	next  request
	// pending holds the completions of started requests; at most the
	// requests of MaxLatencyMs, about a hundred.
	pending *detgen.Heap[completion]
}

func (r *splitReader) load() {
	if r.j < r.n {
		r.next = r.src.request(r.split, r.j)
	}
}

// step advances by one event: the start of request r, or the completion
// of request r at ts. On a tie a completion goes first: it belongs to an
// earlier request.
func (r *splitReader) step() (kind Kind, req request, ts int64, ok bool) {
	if r.j < r.n && (r.pending.Len() == 0 || r.next.start < r.pending.Min().ts) {
		st := r.next
		if !st.abandoned {
			r.pending.Push(completion{ts: r.src.completedAt(st), index: st.index})
		}
		r.j++
		r.load()
		return RequestStarted, st, st.start, true
	}
	if r.pending.Len() == 0 {
		return 0, request{}, 0, false
	}
	c := r.pending.Pop()
	return RequestCompleted, request{index: c.index}, c.ts, true
}

func (r *splitReader) Next(ctx context.Context) (Event, int64, bool, error) {
	kind, req, ts, ok := r.step()
	if !ok {
		return Event{}, 0, false, nil
	}
	if kind == RequestStarted {
		return r.src.started(req), ts, true, nil
	}
	return r.src.completed(req.index, ts), ts, true, nil
}
