package sessions

import (
	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
)

// features is SessionFeatures, keyed by user_id.
type features struct {
	session state.ValueState[SessionAgg]
	counts  state.MapState[string, int64]
}

func (f *features) Open(ctx *engine.OpenContext) error {
	var err error
	if f.session, err = engine.GetValue(ctx, sessionDesc); err != nil {
		return err
	}
	f.counts, err = engine.GetMap(ctx, countsDesc)
	return err
}

func (f *features) ProcessElement(ctx *engine.Context[string, SessionSummary], c Click) error {
	s, ok, err := f.session.Value()
	if err != nil {
		return err
	}
	if ok && c.TS >= s.end() {
		// The session ended before this click, even if the watermark has not
		// said so yet: close it as its timer would, so that the result does
		// not depend on which comes first.
		if err := f.close(ctx, s); err != nil {
			return err
		}
		ok = false
	}
	if ok {
		// One timer per user: the old one goes before the new one comes.
		if err := ctx.DeleteEventTimeTimer(s.end()); err != nil {
			return err
		}
	} else {
		s = SessionAgg{StartTS: c.TS, LastTS: c.TS}
	}
	s.Clicks++
	s.LastTS = max(s.LastTS, c.TS)
	if err := f.session.Update(s); err != nil {
		return err
	}
	if err := ctx.RegisterEventTimeTimer(s.end()); err != nil {
		return err
	}
	// One entry touched per click, never the whole map.
	n, _, err := f.counts.Get(c.Category)
	if err != nil {
		return err
	}
	return f.counts.Put(c.Category, n+1)
}

func (f *features) OnTimer(ctx *engine.Context[string, SessionSummary], t engine.TimerInfo) error {
	s, ok, err := f.session.Value()
	if err != nil || !ok || s.end() != t.Timestamp {
		return err
	}
	return f.close(ctx, s)
}

// close emits the session at its end, whatever triggered it, and clears it:
// the session ends, so must its state.
func (f *features) close(ctx *engine.Context[string, SessionSummary], s SessionAgg) error {
	if err := f.session.Clear(); err != nil {
		return err
	}
	if err := ctx.DeleteEventTimeTimer(s.end()); err != nil {
		return err
	}
	return ctx.EmitAt(SessionSummary{UserID: ctx.Key(), StartTS: s.StartTS, LastTS: s.LastTS, Clicks: s.Clicks}, s.end())
}
