package gateway

import (
	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
)

// assembler is RequestAssembler, keyed by request_id: it holds each request
// in flight in `open` and emits one RequestRecord when it completes or, with
// the timer, when it is abandoned.
type assembler struct {
	desc *state.ValueDescriptor[OpenRequest]
	// leak drops the timer: abandoned requests stay in `open`.
	leak bool
	open state.ValueState[OpenRequest]
}

func (a *assembler) Open(ctx *engine.OpenContext) error {
	var err error
	a.open, err = engine.GetValue(ctx, a.desc)
	return err
}

func deadline(o OpenRequest) int64 { return o.StartedTS + AbandonAfter.Milliseconds() }

func (a *assembler) ProcessElement(ctx *engine.Context[string, RequestRecord], e Event) error {
	if e.Kind == RequestStarted {
		err := a.open.Update(OpenRequest{RequestID: e.RequestID, TenantID: e.TenantID, Model: e.Model, StartedTS: e.TS, PromptTokens: e.PromptTokens})
		if err != nil || a.leak {
			return err
		}
		return ctx.RegisterEventTimeTimer(e.TS + AbandonAfter.Milliseconds())
	}
	o, ok, err := a.open.Value()
	if err != nil || !ok {
		// A completion without a start in state: already billed as
		// abandoned, or its start expired under TTL.
		return err
	}
	if !a.leak && e.TS >= deadline(o) {
		// The deadline has passed in event time even if the watermark has
		// not: decide as the timer would, so that the result does not
		// depend on which comes first.
		return a.abandon(ctx, o)
	}
	if err := a.open.Clear(); err != nil {
		return err
	}
	if !a.leak {
		if err := ctx.DeleteEventTimeTimer(deadline(o)); err != nil {
			return err
		}
	}
	return ctx.Emit(RequestRecord{
		RequestID: o.RequestID, TenantID: o.TenantID, Model: o.Model, StartedTS: o.StartedTS, TS: e.TS,
		LatencyMs: e.LatencyMs, PromptTokens: o.PromptTokens, CompletionTokens: e.CompletionTokens, Status: e.Status,
	})
}

func (a *assembler) OnTimer(ctx *engine.Context[string, RequestRecord], t engine.TimerInfo) error {
	o, ok, err := a.open.Value()
	if err != nil || !ok || deadline(o) != t.Timestamp {
		return err
	}
	return a.abandon(ctx, o)
}

// abandon bills o as abandoned at its deadline, whatever triggered it.
func (a *assembler) abandon(ctx *engine.Context[string, RequestRecord], o OpenRequest) error {
	if err := a.open.Clear(); err != nil {
		return err
	}
	if err := ctx.DeleteEventTimeTimer(deadline(o)); err != nil {
		return err
	}
	return ctx.EmitAt(RequestRecord{
		RequestID: o.RequestID, TenantID: o.TenantID, Model: o.Model, StartedTS: o.StartedTS, TS: deadline(o),
		LatencyMs: int32(AbandonAfter.Milliseconds()), PromptTokens: o.PromptTokens, Status: StatusAbandoned,
	}, deadline(o))
}
