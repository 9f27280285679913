package flow

import "sync"

// AlignGroup is one watermark alignment group (Watermarks.AlignmentGroup):
// the source subtasks in it, members of type M, publish the watermarks
// they send, and a subtask more than its MaxDrift ahead of the lowest
// waits.
type AlignGroup[M comparable] struct {
	mu      sync.Mutex
	members map[M]alignMember
	changed chan struct{}
}

type alignMember struct {
	watermark int64
	// out is set for a subtask that has stopped, ended or gone idle: it
	// holds nobody back.
	out bool
}

// NewAlignGroup returns a group without members.
func NewAlignGroup[M comparable]() *AlignGroup[M] {
	return &AlignGroup[M]{members: map[M]alignMember{}, changed: make(chan struct{})}
}

// Join adds t to the group before any member reads.
func (g *AlignGroup[M]) Join(t M) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members[t] = alignMember{watermark: MinWatermark}
}

// Update publishes t's watermark and whether it is out of the group.
func (g *AlignGroup[M]) Update(t M, watermark int64, out bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.members[t]; m.watermark == watermark && m.out == out {
		return
	}
	g.members[t] = alignMember{watermark: watermark, out: out}
	close(g.changed)
	g.changed = make(chan struct{})
}

// Lowest returns the lowest watermark of the members still in the group
// (MaxWatermark when none is) and a channel closed at the next change.
func (g *AlignGroup[M]) Lowest() (int64, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := int64(MaxWatermark)
	for _, m := range g.members {
		if !m.out {
			w = min(w, m.watermark)
		}
	}
	return w, g.changed
}
