package engine

import "sync"

// alignGroup is one watermark alignment group (Watermarks.AlignmentGroup):
// the source subtasks in it publish the watermarks they send, and a
// subtask more than its MaxDrift ahead of the lowest waits.
type alignGroup struct {
	mu      sync.Mutex
	members map[*task]alignMember
	changed chan struct{}
}

type alignMember struct {
	watermark int64
	// out is set for a subtask that has stopped, ended or gone idle: it
	// holds nobody back.
	out bool
}

// alignGroups makes the groups the job's sources name, each with every
// subtask of its sources as a member at MinWatermark.
func alignGroups(nodes []*node) map[string]*alignGroup {
	groups := map[string]*alignGroup{}
	for _, n := range nodes {
		name := n.watermarks.AlignmentGroup
		if n.kind != sourceNode || name == "" {
			continue
		}
		if groups[name] == nil {
			groups[name] = newAlignGroup()
		}
	}
	return groups
}

func newAlignGroup() *alignGroup {
	return &alignGroup{members: map[*task]alignMember{}, changed: make(chan struct{})}
}

// join adds t to the group before any member reads.
func (g *alignGroup) join(t *task) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members[t] = alignMember{watermark: MinWatermark}
}

// update publishes t's watermark and whether it is out of the group.
func (g *alignGroup) update(t *task, watermark int64, out bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.members[t]; m.watermark == watermark && m.out == out {
		return
	}
	g.members[t] = alignMember{watermark: watermark, out: out}
	close(g.changed)
	g.changed = make(chan struct{})
}

// lowest returns the lowest watermark of the members still in the group
// (MaxWatermark when none is) and a channel closed at the next change.
func (g *alignGroup) lowest() (int64, <-chan struct{}) {
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
