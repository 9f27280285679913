package savepoint

import (
	"fmt"
	"strings"
)

// FindOperator returns the index of the operator ref names: its uid, its
// ID (case does not matter), the ID IDOf derives from ref as a uid, or its
// name when one operator alone has it. The error lists the operators there
// are; it is a mistake of the caller's, not of the savepoint.
func (m *Metadata) FindOperator(ref string) (int, error) {
	for i := range m.Operators {
		if m.Operators[i].UID == ref {
			return i, nil
		}
	}
	for i := range m.Operators {
		if id := m.Operators[i].ID; id != "" && strings.EqualFold(id, ref) {
			return i, nil
		}
	}
	if m.IDOf != nil {
		id := m.IDOf(ref)
		for i := range m.Operators {
			if m.Operators[i].ID == id {
				return i, nil
			}
		}
	}
	var named []int
	var names []string
	for i := range m.Operators {
		op := &m.Operators[i]
		if op.Name == ref {
			named = append(named, i)
		}
		names = append(names, op.label())
	}
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
		return 0, fmt.Errorf("no operator %q in the savepoint (operators: %s)", ref, strings.Join(names, ", "))
	}
	return 0, fmt.Errorf("%d operators are named %q; name one by its uid or ID", len(named), ref)
}

// label names an operator in a list of them: its uid, with its name and ID
// where they say more.
func (o *Operator) label() string {
	var extra []string
	if o.Name != "" && o.Name != o.UID {
		extra = append(extra, o.Name)
	}
	if o.ID != "" && o.ID != o.UID {
		extra = append(extra, o.ID)
	}
	if len(extra) == 0 {
		return o.UID
	}
	return o.UID + " (" + strings.Join(extra, ", ") + ")"
}

// CheckRead returns an error wrapping ErrUnsupported when operator op (or,
// for op < 0, any operator) has state the layout's reader cannot read,
// naming the first such part: a tool that needs every entry calls it
// before reading.
func (m *Metadata) CheckRead(op int) error {
	for i := range m.Operators {
		if op >= 0 && i != op {
			continue
		}
		if u := m.Operators[i].Unread; len(u) > 0 {
			return fmt.Errorf("%w: operator %q: %s", ErrUnsupported, m.Operators[i].UID, u[0])
		}
	}
	return nil
}
