package diff

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// operatorStates compares the operator list states and broadcast states
// of an operator, matched by name; they live in the metadata, so this
// reads nothing.
func (c *comparison) operatorStates(oa, ob *savepoint.Operator) ([]OperatorStateDiff, error) {
	var out []OperatorStateDiff
	want := func(name string) bool { return c.opts.State == "" || name == c.opts.State }
	var listsA, listsB []savepoint.OperatorState
	var bcA, bcB []savepoint.BroadcastState
	uid := ""
	if oa != nil {
		listsA, bcA, uid = oa.OperatorStates, oa.BroadcastStates, oa.UID
	}
	if ob != nil {
		listsB, bcB, uid = ob.OperatorStates, ob.BroadcastStates, ob.UID
	}
	for _, name := range names(listsA, listsB, func(s savepoint.OperatorState) string { return s.Name }) {
		if !want(name) {
			continue
		}
		sa, sb := find(listsA, name, func(s savepoint.OperatorState) string { return s.Name }), find(listsB, name, func(s savepoint.OperatorState) string { return s.Name })
		d, err := c.operatorList(uid, name, sa, sb)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	for _, name := range names(bcA, bcB, func(s savepoint.BroadcastState) string { return s.Name }) {
		if !want(name) {
			continue
		}
		sa, sb := find(bcA, name, func(s savepoint.BroadcastState) string { return s.Name }), find(bcB, name, func(s savepoint.BroadcastState) string { return s.Name })
		d, err := c.broadcast(uid, name, sa, sb)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// names lists the names of a's states, then those only in b.
func names[T any](a, b []T, name func(T) string) []string {
	var out []string
	for _, s := range a {
		out = append(out, name(s))
	}
	for _, s := range b {
		if !slices.Contains(out, name(s)) {
			out = append(out, name(s))
		}
	}
	return out
}

func find[T any](l []T, n string, name func(T) string) *T {
	for i := range l {
		if name(l[i]) == n {
			return &l[i]
		}
	}
	return nil
}

// operatorList compares the elements of every subtask of each side as
// multisets: a restore hands them out anew at any parallelism, so which
// subtask holds an element, and in what order, is no difference.
func (c *comparison) operatorList(uid, name string, sa, sb *savepoint.OperatorState) (OperatorStateDiff, error) {
	d := OperatorStateDiff{Operator: uid, Name: name, In: presence(sa != nil, sb != nil)}
	elements := func(s *savepoint.OperatorState) [][]byte {
		if s == nil {
			return nil
		}
		var all [][]byte
		for _, sub := range s.Subtasks {
			all = append(all, sub...)
		}
		slices.SortFunc(all, bytes.Compare)
		return all
	}
	ea, eb := elements(sa), elements(sb)
	fig := func(s *savepoint.OperatorState, e [][]byte) *Figures {
		if s == nil {
			return nil
		}
		f := &Figures{Entries: uint64(len(e)), Type: s.Element.String()}
		for _, x := range e {
			f.Bytes += uint64(len(x))
		}
		return f
	}
	d.A, d.B = fig(sa, ea), fig(sb, eb)
	d.Distribution = either(sa, sb).Distribution.String()
	var render [2]func([]byte) (any, error)
	if c.opts.Examples > 0 {
		d.Examples = emptyExamples()
		for i, s := range []*savepoint.OperatorState{sa, sb} {
			if s == nil {
				continue
			}
			r, err := renderer(s.Element, fmt.Sprintf("operator %q operator state %q", uid, name))
			if err != nil {
				return d, err
			}
			render[i] = r
		}
	}
	example := func(k kind, a, b []byte) error {
		if d.Examples == nil || len(*d.Examples.list(k)) >= c.opts.Examples {
			return nil
		}
		var ex Example
		for i, v := range [][]byte{a, b} {
			if v == nil {
				continue
			}
			x, err := render[i](v)
			if err != nil {
				return err
			}
			if i == 0 {
				ex.A = []Entry{{{"value", x}}}
			} else {
				ex.B = []Entry{{{"value", x}}}
			}
		}
		l := d.Examples.list(k)
		*l = append(*l, ex)
		return nil
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var cm int
		switch {
		case j == len(eb):
			cm = -1
		case i == len(ea):
			cm = 1
		default:
			cm = bytes.Compare(ea[i], eb[j])
		}
		var err error
		switch {
		case cm < 0:
			d.Entries.OnlyA++
			err = example(kindOnlyA, ea[i], nil)
			i++
		case cm > 0:
			d.Entries.OnlyB++
			err = example(kindOnlyB, nil, eb[j])
			j++
		default:
			d.Entries.Unchanged++
			err = example(kindUnchanged, ea[i], nil)
			i++
			j++
		}
		if err != nil {
			return d, err
		}
	}
	return d, nil
}

// broadcast compares broadcast state by key.
func (c *comparison) broadcast(uid, name string, sa, sb *savepoint.BroadcastState) (OperatorStateDiff, error) {
	d := OperatorStateDiff{Operator: uid, Name: name, Distribution: "broadcast", In: presence(sa != nil, sb != nil)}
	sorted := func(s *savepoint.BroadcastState) []savepoint.BroadcastEntry {
		if s == nil {
			return nil
		}
		e := slices.Clone(s.Entries)
		slices.SortStableFunc(e, func(x, y savepoint.BroadcastEntry) int { return bytes.Compare(x.Key, y.Key) })
		return e
	}
	ea, eb := sorted(sa), sorted(sb)
	fig := func(s *savepoint.BroadcastState, e []savepoint.BroadcastEntry) *Figures {
		if s == nil {
			return nil
		}
		f := &Figures{Keys: uint64(len(e)), Entries: uint64(len(e)), Type: s.Value.String()}
		for _, x := range e {
			f.Bytes += uint64(len(x.Key) + len(x.Value))
		}
		return f
	}
	d.A, d.B = fig(sa, ea), fig(sb, eb)
	var keys, values [2]func([]byte) (any, error)
	if c.opts.Examples > 0 {
		d.Examples = emptyExamples()
		for i, s := range []*savepoint.BroadcastState{sa, sb} {
			if s == nil {
				continue
			}
			what := fmt.Sprintf("operator %q broadcast state %q", uid, name)
			var err error
			if keys[i], err = renderer(s.Key, what); err != nil {
				return d, err
			}
			if values[i], err = renderer(s.Value, what); err != nil {
				return d, err
			}
		}
	}
	example := func(k kind, a, b *savepoint.BroadcastEntry) error {
		if d.Examples == nil || len(*d.Examples.list(k)) >= c.opts.Examples {
			return nil
		}
		var ex Example
		for i, e := range []*savepoint.BroadcastEntry{a, b} {
			if e == nil {
				continue
			}
			var err error
			if ex.Key == nil {
				if ex.Key, err = keys[i](e.Key); err != nil {
					return err
				}
			}
			v, err := values[i](e.Value)
			if err != nil {
				return err
			}
			if i == 0 {
				ex.A = []Entry{{{"value", v}}}
			} else {
				ex.B = []Entry{{{"value", v}}}
			}
		}
		l := d.Examples.list(k)
		*l = append(*l, ex)
		return nil
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var cm int
		switch {
		case j == len(eb):
			cm = -1
		case i == len(ea):
			cm = 1
		default:
			cm = bytes.Compare(ea[i].Key, eb[j].Key)
		}
		var err error
		switch {
		case cm < 0:
			d.Entries.OnlyA++
			err = example(kindOnlyA, &ea[i], nil)
			i++
		case cm > 0:
			d.Entries.OnlyB++
			err = example(kindOnlyB, nil, &eb[j])
			j++
		case bytes.Equal(ea[i].Value, eb[j].Value):
			d.Entries.Unchanged++
			err = example(kindUnchanged, &ea[i], nil)
			i++
			j++
		default:
			d.Entries.Changed++
			err = example(kindChanged, &ea[i], &eb[j])
			i++
			j++
		}
		if err != nil {
			return d, err
		}
	}
	return d, nil
}

// either returns a unless it is nil.
func either[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func emptyExamples() *Examples {
	return &Examples{OnlyA: []Example{}, OnlyB: []Example{}, Changed: []Example{}, Unchanged: []Example{}}
}

// renderer decodes the values of a snapshot held in the metadata, for
// examples; what does not decode is corruption of the metadata.
func renderer(snap serializers.Snapshot, what string) (func([]byte) (any, error), error) {
	ser, err := serializers.Restore(snap)
	if err != nil {
		return nil, inspect.MetadataCorrupt(what+": a serializer snapshot cannot be restored", err)
	}
	render := jsonvalue.For(snap)
	return func(b []byte) (any, error) {
		v, err := ser.DecodeAny(b)
		if err != nil {
			return nil, inspect.MetadataCorrupt(what+": a value does not decode", err)
		}
		return render(v), nil
	}, nil
}
