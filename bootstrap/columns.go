package bootstrap

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/stateproc/stateproc/bootstrap/internal/encode"
	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// role is what a column of a dataset is to its state.
type role uint8

const (
	// roleIgnored is a column derived from the others, which export writes
	// and a bootstrap works out anew: key_group (at the job's max
	// parallelism) and expired.
	roleIgnored role = iota
	roleKey
	roleNamespace
	roleWindowStart
	roleWindowEnd
	roleMapKey
	roleIndex
	roleValue
	roleLastModified
	roleTimestamp
	roleSubtask
)

// column is a column of a state's datasets: its name, its role, the
// encoder of its values, and whether a row may leave it out or null.
type column struct {
	name     string
	role     role
	enc      *encode.Column
	optional bool
}

// layout is the columns of a state's datasets, compiled once.
type layout struct {
	once sync.Once
	cols []column
	err  error
}

var (
	instantColumn = mustCompile(serializers.Snapshot{Kind: serializers.KindTimestamp})
	intColumn     = mustCompile(serializers.Snapshot{Kind: serializers.KindInt64})
)

func mustCompile(s serializers.Snapshot) *encode.Column {
	c, err := encode.Compile(s)
	if err != nil {
		panic(err) // a built-in kind
	}
	return c
}

// columns returns the columns of t's datasets, as export writes them.
func (t *target) columns() ([]column, error) {
	t.layout.once.Do(func() { t.layout.cols, t.layout.err = t.compileColumns() })
	return t.layout.cols, t.layout.err
}

func (t *target) compileColumns() ([]column, error) {
	var cols []column
	add := func(name string, r role, s serializers.Snapshot, optional bool) error {
		c, err := encode.Compile(s)
		if err != nil {
			return fmt.Errorf("%w: operator %q %s %q: column %s: %w", ErrBadData, t.uid, t.what(), t.name, name, err)
		}
		cols = append(cols, column{name: name, role: r, enc: c, optional: optional})
		return nil
	}
	fixed := func(name string, r role, enc *encode.Column, optional bool) {
		cols = append(cols, column{name: name, role: r, enc: enc, optional: optional})
	}
	switch {
	case t.opState != nil:
		fixed(export.ColumnSubtask, roleSubtask, intColumn, true)
		fixed(export.ColumnIndex, roleIndex, intColumn, true)
		return cols, add(export.ColumnValue, roleValue, t.opState.Element, false)
	case t.bcast != nil:
		if err := add(export.ColumnKey, roleKey, t.bcast.Key, false); err != nil {
			return nil, err
		}
		return cols, add(export.ColumnValue, roleValue, t.bcast.Value, false)
	}
	fixed(export.ColumnKeyGroup, roleIgnored, nil, true)
	if err := add(export.ColumnKey, roleKey, t.operator.Key, false); err != nil {
		return nil, err
	}
	ns := t.namespace()
	switch ns.Kind {
	case serializers.KindVoid:
	case serializers.KindWindow:
		fixed(export.ColumnWindowStart, roleWindowStart, instantColumn, false)
		fixed(export.ColumnWindowEnd, roleWindowEnd, instantColumn, false)
	default:
		if err := add(export.ColumnNamespace, roleNamespace, ns, false); err != nil {
			return nil, err
		}
	}
	if t.timers != nil {
		fixed(export.ColumnTimestamp, roleTimestamp, instantColumn, false)
		return cols, nil
	}
	s := t.keyed
	if s.Kind == savepoint.Map {
		if err := add(export.ColumnMapKey, roleMapKey, s.MapKey, false); err != nil {
			return nil, err
		}
	}
	if s.Kind == savepoint.List {
		fixed(export.ColumnIndex, roleIndex, intColumn, true)
	}
	if err := add(export.ColumnValue, roleValue, s.Value, false); err != nil {
		return nil, err
	}
	if s.TTL != nil {
		fixed(export.ColumnLastModified, roleLastModified, instantColumn, true)
		fixed(export.ColumnExpired, roleIgnored, nil, true)
	}
	return cols, nil
}

func (t *target) namespace() serializers.Snapshot {
	if t.timers != nil {
		return t.timers.Namespace
	}
	return t.keyed.Namespace
}

// what says what the target is, for messages.
func (t *target) what() string {
	switch {
	case t.timers != nil:
		return "timer service"
	case t.opState != nil:
		return "operator state"
	case t.bcast != nil:
		return "broadcast state"
	}
	return "state"
}

// row is the values of one row, each the bytes of its column's encoder,
// reused from row to row.
type row struct {
	key, ns, windowEnd, mapKey, value []byte
	index, subtask                    int64
	lastModified, timestamp           int64
	scratch                           []byte
}

// reset readies r for the next row: the optional columns take their
// defaults.
func (r *row) reset(now int64) {
	r.key, r.ns, r.windowEnd, r.mapKey, r.value = r.key[:0], r.ns[:0], r.windowEnd[:0], r.mapKey[:0], r.value[:0]
	r.index, r.subtask, r.lastModified, r.timestamp = noIndex, 0, now, 0
}

// slot is the buffer the encoding of a column's value goes into.
func (r *row) slot(c *column) *[]byte {
	switch c.role {
	case roleKey:
		return &r.key
	case roleNamespace, roleWindowStart:
		return &r.ns
	case roleWindowEnd:
		return &r.windowEnd
	case roleMapKey:
		return &r.mapKey
	case roleValue:
		return &r.value
	}
	r.scratch = r.scratch[:0]
	return &r.scratch
}

// take reads the value of a column of numbers, just encoded into its
// slot.
func (r *row) take(c *column) error {
	if c.role != roleIndex && c.role != roleSubtask && c.role != roleLastModified && c.role != roleTimestamp {
		return nil
	}
	v := int64(binary.BigEndian.Uint64(r.scratch))
	switch c.role {
	case roleIndex:
		if v < 0 || v == 1<<63-1 {
			return fmt.Errorf("index %d is out of range", v)
		}
		r.index = v
	case roleSubtask:
		if v < 0 {
			return fmt.Errorf("subtask %d is negative", v)
		}
		r.subtask = v
	case roleLastModified:
		r.lastModified = v
	default:
		r.timestamp = v
	}
	return nil
}

// emit adds the row to the sink.
func (r *row) emit(s *sink, n int64) error {
	t := s.t
	switch {
	case t.opState != nil:
		s.operatorElement(n, int(r.subtask), r.index, append([]byte(nil), r.value...))
		return nil
	case t.bcast != nil:
		s.broadcastEntry(n, append([]byte(nil), r.key...), append([]byte(nil), r.value...))
		return nil
	}
	ns := r.ns
	if len(r.windowEnd) > 0 {
		ns = append(ns, r.windowEnd...)
		r.ns = ns
	}
	return s.keyed(n, r.key, ns, r.mapKey, r.index, r.lastModified, r.value, r.timestamp)
}
