package bootstrap

import (
	"context"
	"fmt"
	"iter"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Entry is one entry of a state, as Go values in the untyped view of
// package serializers (a string key is a string, an int64 value an int64,
// an Avro record a map[string]any or a struct hamba/avro encodes).
type Entry struct {
	// Key is the entry's key, for keyed states, timer services and
	// broadcast state.
	Key any
	// Namespace is nil for the void namespace.
	Namespace any
	// MapKey is the key within a map state's map.
	MapKey any
	// Value is a keyed state's value, list element or map value, an
	// operator state's element or a broadcast state's value.
	Value any
	// Timestamp is a timer's time, in epoch milliseconds.
	Timestamp int64
	// LastModified is the last-modified time of an entry of a TTL state,
	// in epoch milliseconds, when HasLastModified is set; the entry is
	// stamped with Options.Now otherwise.
	LastModified    int64
	HasLastModified bool
	// Subtask is the subtask whose list an operator state element joins,
	// modulo the operator's parallelism.
	Subtask int
}

// Add adds entries to the state (keyed state, timer service, operator or
// broadcast state) name of operator uid. List elements and operator state
// elements keep the order they come in; any other order is free, since
// the savepoint's order is the serializers' bytes'. An entry whose values
// the state's serializers do not take is a *RowError, counted from 1 in
// this call; an error of the iterator ends the call with it. Either way
// the savepoint cannot be committed.
func (b *Builder) Add(ctx context.Context, uid, name string, entries iter.Seq2[Entry, error]) error {
	t, err := b.lookup(uid, name)
	if err != nil {
		return err
	}
	if err := t.restore(); err != nil {
		return err
	}
	b.mu.Lock()
	b.calls[t]++
	call := b.calls[t]
	b.mu.Unlock()
	src := fmt.Sprintf("%s/%s#%d", uid, name, call)
	s, err := b.open(ctx, t, src)
	if err != nil {
		return err
	}
	defer s.close()
	var row int64
	var key, ns, mk, val []byte
	for e, err := range entries {
		row++
		if err != nil {
			b.bad.add(&RowError{Source: src, Row: row, Err: err})
			return fmt.Errorf("bootstrap: %s: entry %d: %w", src, row, err)
		}
		if row%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		bad := func(column string, err error) error {
			re := &RowError{Source: src, Row: row, Column: column, Err: err}
			b.bad.add(re)
			return re
		}
		if t.key != nil {
			if key, err = t.key.AppendAny(key[:0], e.Key); err != nil {
				return bad("key", err)
			}
		}
		switch {
		case t.opState != nil:
			if e.Subtask < 0 {
				return bad("subtask", fmt.Errorf("subtask %d is negative", e.Subtask))
			}
			if val, err = t.value.AppendAny(nil, e.Value); err != nil {
				return bad("value", err)
			}
			s.operatorElement(row, e.Subtask, noIndex, val)
			continue
		case t.bcast != nil:
			if val, err = t.value.AppendAny(nil, e.Value); err != nil {
				return bad("value", err)
			}
			s.broadcastEntry(row, append([]byte(nil), key...), val)
			continue
		}
		ns = ns[:0]
		if e.Namespace != nil || t.ns.Snapshot().Kind != serializers.KindVoid {
			if ns, err = t.ns.AppendAny(ns, e.Namespace); err != nil {
				return bad("namespace", err)
			}
		}
		if t.timers != nil {
			if err := s.keyed(row, key, ns, nil, noIndex, 0, nil, e.Timestamp); err != nil {
				return err
			}
			continue
		}
		if t.mapKey != nil {
			if mk, err = t.mapKey.AppendAny(mk[:0], e.MapKey); err != nil {
				return bad("map_key", err)
			}
		}
		if val, err = t.value.AppendAny(val[:0], e.Value); err != nil {
			return bad("value", err)
		}
		lm := b.opts.Now
		if e.HasLastModified {
			lm = e.LastModified
		}
		if err := s.keyed(row, key, ns, mk, noIndex, lm, val, 0); err != nil {
			return err
		}
	}
	return nil
}

// restore restores the serializers of t's Go values.
func (t *target) restore() error {
	t.serOnce.Do(func() {
		r := func(what string, s serializers.Snapshot) serializers.Serializer {
			if t.serErr != nil {
				return nil
			}
			ser, err := serializers.Restore(s)
			if err != nil {
				t.serErr = fmt.Errorf("bootstrap: operator %q state %q: %s serializer: %w", t.uid, t.name, what, err)
			}
			return ser
		}
		switch {
		case t.keyed != nil:
			t.key, t.ns, t.value = r("key", t.operator.Key), r("namespace", t.keyed.Namespace), r("value", t.keyed.Value)
			if t.keyed.Kind == savepoint.Map {
				t.mapKey = r("map key", t.keyed.MapKey)
			}
		case t.timers != nil:
			t.key, t.ns = r("key", t.operator.Key), r("namespace", t.timers.Namespace)
		case t.opState != nil:
			t.value = r("element", t.opState.Element)
		default:
			t.key, t.value = r("key", t.bcast.Key), r("value", t.bcast.Value)
		}
	})
	return t.serErr
}

// Values adds the values of a value (or reducing, aggregating) state, by
// key, in the void namespace, stamped with Options.Now if the state has
// TTL: for example bootstrap.Values(ctx, b, "tenant-cost", "usd_total",
// maps.All(totals)).
func Values[K, V any](ctx context.Context, b *Builder, uid, state string, values iter.Seq2[K, V]) error {
	return b.Add(ctx, uid, state, func(yield func(Entry, error) bool) {
		for k, v := range values {
			if !yield(Entry{Key: k, Value: v}, nil) {
				return
			}
		}
	})
}

// Lists adds the lists of a list state, by key, in the void namespace.
func Lists[K, V any](ctx context.Context, b *Builder, uid, state string, lists iter.Seq2[K, []V]) error {
	return b.Add(ctx, uid, state, func(yield func(Entry, error) bool) {
		for k, l := range lists {
			for _, v := range l {
				if !yield(Entry{Key: k, Value: v}, nil) {
					return
				}
			}
		}
	})
}

// Maps adds the maps of a map state, by key, in the void namespace.
func Maps[K any, MK comparable, V any](ctx context.Context, b *Builder, uid, state string, maps iter.Seq2[K, map[MK]V]) error {
	return b.Add(ctx, uid, state, func(yield func(Entry, error) bool) {
		for k, m := range maps {
			for mk, v := range m {
				if !yield(Entry{Key: k, MapKey: mk, Value: v}, nil) {
					return
				}
			}
		}
	})
}

// Timers adds timers of a timer service: for each key, a time in epoch
// milliseconds, in the void namespace. A key may come several times.
func Timers[K any](ctx context.Context, b *Builder, uid, service string, timers iter.Seq2[K, int64]) error {
	return b.Add(ctx, uid, service, func(yield func(Entry, error) bool) {
		for k, ts := range timers {
			if !yield(Entry{Key: k, Timestamp: ts}, nil) {
				return
			}
		}
	})
}

// OperatorState adds elements to an operator list state: each to the list
// of its subtask (modulo the parallelism), in order. slices.All of one list
// deals its elements round-robin over the subtasks.
func OperatorState[V any](ctx context.Context, b *Builder, uid, name string, elements iter.Seq2[int, V]) error {
	return b.Add(ctx, uid, name, func(yield func(Entry, error) bool) {
		for sub, v := range elements {
			if !yield(Entry{Subtask: sub, Value: v}, nil) {
				return
			}
		}
	})
}

// Broadcast adds the entries of a broadcast state.
func Broadcast[K, V any](ctx context.Context, b *Builder, uid, name string, entries iter.Seq2[K, V]) error {
	return b.Add(ctx, uid, name, func(yield func(Entry, error) bool) {
		for k, v := range entries {
			if !yield(Entry{Key: k, Value: v}, nil) {
				return
			}
		}
	})
}
