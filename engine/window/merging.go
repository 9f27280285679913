package window

import (
	"cmp"
	"slices"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/serializers"
)

// MergingWindowSetState is the name of the map state that keeps, per key,
// the session windows in flight and, for each, the window its contents
// and trigger state live under (which stays put as sessions merge, so
// that merging moves no state but the merged windows').
const MergingWindowSetState = "merging-window-set"

var mergingSetDesc = state.NewMap(MergingWindowSetState, serializers.Window(), serializers.Window())

// mergingSet is the current key's merging window set, read from its state
// and written back when it changed.
type mergingSet struct {
	s state.MapState[Window, Window]
	// mapping holds window → state window, sorted by window; loaded, as
	// the state holds it.
	mapping, loaded []windowPair
	changed         bool
}

type windowPair struct{ w, state Window }

func compareWindows(a, b Window) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	return cmp.Compare(a.End, b.End)
}

func openMergingSet(ctx *engine.OpenContext) (*mergingSet, error) {
	s, err := engine.GetMap(ctx, mergingSetDesc)
	return &mergingSet{s: s}, err
}

func (m *mergingSet) load() error {
	m.mapping, m.loaded, m.changed = m.mapping[:0], m.loaded[:0], false
	err := m.s.Range(func(w, sw Window) bool {
		m.mapping = append(m.mapping, windowPair{w, sw})
		return true
	})
	m.loaded = append(m.loaded, m.mapping...)
	return err
}

func (m *mergingSet) find(w Window) (int, bool) {
	return slices.BinarySearchFunc(m.mapping, w, func(p windowPair, w Window) int { return compareWindows(p.w, w) })
}

func (m *mergingSet) put(w, sw Window) {
	i, ok := m.find(w)
	if ok {
		m.mapping[i].state = sw
	} else {
		m.mapping = slices.Insert(m.mapping, i, windowPair{w, sw})
	}
	m.changed = true
}

func (m *mergingSet) remove(w Window) (Window, bool) {
	i, ok := m.find(w)
	if !ok {
		return Window{}, false
	}
	sw := m.mapping[i].state
	m.mapping = slices.Delete(m.mapping, i, i+1)
	m.changed = true
	return sw, true
}

func (m *mergingSet) stateWindow(w Window) (Window, bool) {
	i, ok := m.find(w)
	if !ok {
		return Window{}, false
	}
	return m.mapping[i].state, true
}

// persist writes what changed since load back, entry by entry: clearing
// the map and writing it anew would leave Pebble a range deletion per
// record.
func (m *mergingSet) persist() error {
	if !m.changed {
		return nil
	}
	m.changed = false
	for _, p := range m.loaded {
		if _, ok := m.find(p.w); !ok {
			if err := m.s.Remove(p.w); err != nil {
				return err
			}
		}
	}
	for _, p := range m.mapping {
		i, ok := slices.BinarySearchFunc(m.loaded, p.w, func(q windowPair, w Window) int { return compareWindows(q.w, w) })
		if ok && m.loaded[i].state == p.state {
			continue
		}
		if err := m.s.Put(p.w, p.state); err != nil {
			return err
		}
	}
	return nil
}

// mergeFunc is told, for each merge, the window the merged ones became,
// the merged windows, the state window the result keeps and the state
// windows whose contents go into it.
type mergeFunc func(result Window, merged []Window, stateResult Window, mergedState []Window) error

// add puts w into the set, merging it with the windows it overlaps as
// Flink's MergingWindowSet.addWindow does, and returns the window w is now
// part of. Where Flink takes any merged window's state window, this takes
// that of the earliest, so that runs agree.
func (m *mergingSet) add(w Window, merge mergeFunc) (Window, error) {
	windows := make([]Window, 0, len(m.mapping)+1)
	for _, p := range m.mapping {
		windows = append(windows, p.w)
	}
	_, inFlight := m.find(w)
	if !inFlight {
		windows = append(windows, w)
		slices.SortFunc(windows, compareWindows)
	}

	result, mergedNew := w, false
	merges := 0
	for lo := 0; lo < len(windows); {
		hi, c := lo+1, windows[lo]
		for hi < len(windows) && intersects(c, windows[hi]) {
			c = cover(c, windows[hi])
			hi++
		}
		group := windows[lo:hi]
		lo = hi
		if len(group) < 2 {
			continue
		}
		merges++
		merged := make([]Window, 0, len(group))
		for _, g := range group {
			if g == w && !mergedNew {
				mergedNew, result = true, c
				continue
			}
			merged = append(merged, g)
		}
		target, _ := m.stateWindow(merged[0])
		var mergedState []Window
		for _, g := range merged {
			if sw, ok := m.remove(g); ok && sw != target {
				mergedState = append(mergedState, sw)
			}
		}
		m.put(c, target)
		if len(merged) == 1 && merged[0] == c {
			// One window in flight took in w without growing: nothing
			// merges.
			continue
		}
		if err := merge(c, merged, target, mergedState); err != nil {
			return Window{}, err
		}
	}
	if !inFlight && (merges == 0 || !mergedNew) {
		m.put(w, w)
	}
	return result, nil
}

// retire removes a window whose state is gone.
func (m *mergingSet) retire(w Window) { m.remove(w) }
