package inspect

import (
	"cmp"
	"slices"
	"sync"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// OpaqueInfo counts the decoded values of one class that only the job's
// classes decode, which verify --deep found kept as bytes.
type OpaqueInfo struct {
	Class  string `json:"class"`
	Values uint64 `json:"values"`
}

// opaqueCount tallies opaque values by class; it is safe for concurrent
// use.
type opaqueCount struct {
	mu  sync.Mutex
	per map[string]uint64
}

func (c *opaqueCount) add(classes []string) {
	if len(classes) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.per == nil {
		c.per = map[string]uint64{}
	}
	for _, cl := range classes {
		c.per[cl]++
	}
}

// note adds the opaque parts of v, a value of snap.
func (c *opaqueCount) note(snap serializers.Snapshot, v any) {
	if o, ok := snap.External.(serializers.Opaquer); ok {
		c.add(o.Opaque(v))
	}
}

// counts says whether entries of ref can hold opaque parts: whether a
// serializer of its key, namespace, map key or value tells them.
func (c *opaqueCount) counts(m *savepoint.Metadata, ref savepoint.StateRef) bool {
	op := &m.Operators[ref.Operator]
	snaps := []serializers.Snapshot{op.Key}
	if ks := m.KeyedState(ref); ks != nil {
		snaps = append(snaps, ks.Namespace, ks.MapKey, ks.Value)
	} else {
		snaps = append(snaps, m.TimerService(ref).Namespace)
	}
	for _, s := range snaps {
		if _, ok := s.External.(serializers.Opaquer); ok {
			return true
		}
	}
	return false
}

// entry adds the opaque parts of a decoded entry of ref.
func (c *opaqueCount) entry(m *savepoint.Metadata, ref savepoint.StateRef, d savepoint.Decoded) {
	op := &m.Operators[ref.Operator]
	c.note(op.Key, d.Key)
	if ks := m.KeyedState(ref); ks != nil {
		c.note(ks.Namespace, d.Namespace)
		c.note(ks.MapKey, d.MapKey)
		c.note(ks.Value, d.Value)
	} else {
		c.note(m.TimerService(ref).Namespace, d.Namespace)
	}
}

func (c *opaqueCount) report() []OpaqueInfo {
	var out []OpaqueInfo
	for cl, n := range c.per {
		out = append(out, OpaqueInfo{Class: cl, Values: n})
	}
	slices.SortFunc(out, func(a, b OpaqueInfo) int { return cmp.Compare(a.Class, b.Class) })
	return out
}
