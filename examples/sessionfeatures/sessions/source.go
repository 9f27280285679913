package sessions

import (
	"context"
	"fmt"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/examples/internal/detgen"
)

// Source generates SessionFeatures' clickstream: every user has a few
// sessions, 1 to 20 hours apart, of clicks 10 s to 10 min apart, over fewer
// than 7 days. Every click is a pure function of (seed, user, click index).
// A split merges its users' clicks in event-time order with a heap of each
// user's next click, so it needs memory for its users only, and split s
// holds exactly detgen.Share(Clicks(), s, Splits) clicks, so that stopping
// the job after Clicks() records is the end of the input with every split
// paused on its last click.
type Source struct {
	seed  int64
	users int64
	plans [Splits]plan
}

// NewSource plans the input of cfg.
func NewSource(cfg Config) (*Source, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	s := &Source{seed: cfg.Seed, users: cfg.Users}
	for split := range s.plans {
		p := plan{users: detgen.Share(cfg.Users, split, Splits)}
		p.lastClicks = detgen.Share(s.Clicks(), split, Splits) - (p.users-1)*ClicksPerUser
		if p.lastClicks < 1 || p.lastClicks > maxClicks {
			return nil, fmt.Errorf("sessions: %d users leave split %d's last user %d clicks", cfg.Users, split, p.lastClicks)
		}
		s.plans[split] = p
	}
	return s, nil
}

// Splits is the number of splits.
func (s *Source) Splits() int { return Splits }

// Users is the number of users.
func (s *Source) Users() int64 { return s.users }

// Clicks is the number of clicks in the input.
func (s *Source) Clicks() int64 { return s.users * ClicksPerUser }

// Open returns a reader of split positioned after offset clicks. It replays
// the split's first offset clicks without building them, so it takes time
// linear in offset.
func (s *Source) Open(ctx context.Context, split int, offset int64) (engine.SplitReader[Click], error) {
	if split < 0 || split >= Splits {
		return nil, fmt.Errorf("sessions: split %d of %d", split, Splits)
	}
	p := &s.plans[split]
	r := &splitReader{src: s, heap: detgen.NewHeap(int(p.users), func(a, b user) bool {
		return a.ts < b.ts || a.ts == b.ts && a.u < b.u
	})}
	for k := int64(0); k < p.users; k++ {
		r.heap.Push(s.firstClick(split, k))
	}
	for n := int64(0); n < offset; n++ {
		if _, ok := r.step(); !ok {
			return nil, fmt.Errorf("sessions: split %d has fewer than %d clicks", split, offset)
		}
	}
	return r, nil
}

type splitReader struct {
	src  *Source
	heap *detgen.Heap[user]
}

// step takes the earliest next click of any user of the split.
func (r *splitReader) step() (user, bool) {
	if r.heap.Len() == 0 {
		return user{}, false
	}
	us := r.heap.Min()
	next := us
	if r.src.advance(&next) {
		r.heap.ReplaceMin(next)
	} else {
		r.heap.Pop()
	}
	return us, true
}

func (r *splitReader) Next(ctx context.Context) (Click, int64, bool, error) {
	us, ok := r.step()
	if !ok {
		return Click{}, 0, false, nil
	}
	return Click{UserID: userID(us.u), Category: r.src.category(us.u, us.m), TS: us.ts}, us.ts, true, nil
}
