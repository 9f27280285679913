package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// BroadcastDescriptor declares a broadcast state: a map that every subtask
// of the connected operator holds identically.
type BroadcastDescriptor[K, V any] struct {
	spec broadcastSpec
}

type broadcastSpec struct {
	name string
	key  serializers.Serializer
	val  serializers.Serializer
}

// NewBroadcastMap declares a broadcast state: a map from K to V.
func NewBroadcastMap[K, V any](name string, key serializers.Of[K], val serializers.Of[V]) *BroadcastDescriptor[K, V] {
	return &BroadcastDescriptor[K, V]{spec: broadcastSpec{name: name, key: key, val: val}}
}

// BroadcastStateDescriptor is implemented by every BroadcastDescriptor.
type BroadcastStateDescriptor interface {
	broadcastSpec() broadcastSpec
}

func (d *BroadcastDescriptor[K, V]) broadcastSpec() broadcastSpec { return d.spec }

// BroadcastStream is a low-volume stream sent to every subtask of the
// operator it is connected to, together with the broadcast states it
// updates.
type BroadcastStream[T any] struct {
	in    Stream[T]
	specs []broadcastSpec
}

// Broadcast turns s into a broadcast stream that maintains the given
// broadcast states.
func Broadcast[T any](s Stream[T], descs ...BroadcastStateDescriptor) BroadcastStream[T] {
	bs := BroadcastStream[T]{in: s}
	for _, d := range descs {
		bs.specs = append(bs.specs, d.broadcastSpec())
	}
	return bs
}

// KeyedBroadcastProcessFunction processes a keyed stream connected to a
// broadcast stream. Broadcast state is read-write in
// ProcessBroadcastElement and read-only in ProcessElement: every subtask
// applies the same broadcast elements and so ends with the same state.
type KeyedBroadcastProcessFunction[K, IN, B, OUT any] interface {
	KeyedProcessFunction[K, IN, OUT]
	ProcessBroadcastElement(ctx *BroadcastContext[OUT], b B) error
}

// BroadcastContext is given to ProcessBroadcastElement. It is the
// subtask's context.Context too.
type BroadcastContext[OUT any] struct {
	context.Context
	t   *task
	out *output[OUT]
	ts  int64
}

// Timestamp is the broadcast element's event time.
func (c *BroadcastContext[OUT]) Timestamp() int64 { return c.ts }

// Emit sends v downstream with the element's timestamp.
func (c *BroadcastContext[OUT]) Emit(v OUT) error { return c.out.emit(v, c.ts) }

// CurrentWatermark is the operator's event-time watermark.
func (c *BroadcastContext[OUT]) CurrentWatermark() int64 { return c.t.watermark }

// ProcessBroadcast connects a keyed stream with a broadcast stream.
func ProcessBroadcast[K, IN, B, OUT any](ks KeyedStream[K, IN], bs BroadcastStream[B], newFn func() KeyedBroadcastProcessFunction[K, IN, B, OUT], opts ...OperatorOption) Stream[OUT] {
	j := ks.in.job
	n := j.addNode(keyedNode, "broadcast-process", opts)
	n.key = ks.keySer
	n.stateful = true
	n.opState = append(n.opState, subtaskClockSpec())
	n.bcast = bs.specs
	connect(ks.in, n, hashEdge, 0, keyEncoder(ks))
	connect(bs.in, n, broadcastEdge, 1, nil)
	n.run = func(t *task) error {
		fn := newFn()
		k := &keyedRunner[K, IN, B, OUT]{keyOf: ks.key, keySer: ks.keySer, fn: fn, onBroadcast: fn.ProcessBroadcastElement}
		return k.run(t)
	}
	return Stream[OUT]{job: j, node: n}
}

// ErrBroadcastReadOnly is returned when broadcast state is written outside
// ProcessBroadcastElement.
var ErrBroadcastReadOnly = errors.New("engine: broadcast state is read-only outside ProcessBroadcastElement")

// broadcastStore holds one broadcast state of one subtask as Go values,
// identified by serialized key.
type broadcastStore struct {
	spec    broadcastSpec
	entries map[string]bcastEntry
}

type bcastEntry struct{ k, v any }

func (s *broadcastStore) snapshot() (savepoint.BroadcastState, error) {
	bs := savepoint.BroadcastState{Name: s.spec.name, Key: s.spec.key.Snapshot(), Value: s.spec.val.Snapshot()}
	keys := make([]string, 0, len(s.entries))
	for k := range s.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := s.spec.val.AppendAny(nil, s.entries[k].v)
		if err != nil {
			return bs, fmt.Errorf("broadcast state %q: %w", s.spec.name, err)
		}
		bs.Entries = append(bs.Entries, savepoint.BroadcastEntry{Key: []byte(k), Value: v})
	}
	return bs, nil
}

// restore decodes the saved entries, whose serializers openRestore has
// found to be the declared ones as they are.
func (s *broadcastStore) restore(saved *savepoint.BroadcastState) error {
	for _, e := range saved.Entries {
		k, err := s.spec.key.DecodeAny(e.Key)
		if err != nil {
			return fmt.Errorf("broadcast state %q: key: %w", s.spec.name, err)
		}
		v, err := s.spec.val.DecodeAny(e.Value)
		if err != nil {
			return fmt.Errorf("broadcast state %q: value: %w", s.spec.name, err)
		}
		s.entries[string(e.Key)] = bcastEntry{k: k, v: v}
	}
	return nil
}

// BroadcastState is the handle of a broadcast state.
type BroadcastState[K, V any] struct {
	t   *task
	s   *broadcastStore
	buf []byte
}

// GetBroadcast returns the handle of a broadcast state that the connected
// broadcast stream declared.
func GetBroadcast[K, V any](c *OpenContext, d *BroadcastDescriptor[K, V]) (*BroadcastState[K, V], error) {
	s, ok := c.t.bcast[d.spec.name]
	if !ok {
		return nil, fmt.Errorf("engine: operator %s: broadcast state %q was not declared on its broadcast stream", c.t.n.label(), d.spec.name)
	}
	return &BroadcastState[K, V]{t: c.t, s: s}, nil
}

func (b *BroadcastState[K, V]) keyOf(k K) (string, error) {
	var err error
	b.buf, err = b.s.spec.key.AppendAny(b.buf[:0], k)
	return string(b.buf), err
}

// Get returns the value stored under k.
func (b *BroadcastState[K, V]) Get(k K) (V, bool, error) {
	var zero V
	kb, err := b.keyOf(k)
	if err != nil {
		return zero, false, err
	}
	e, ok := b.s.entries[kb]
	if !ok {
		return zero, false, nil
	}
	return e.v.(V), true, nil
}

// Put stores v under k; only in ProcessBroadcastElement.
func (b *BroadcastState[K, V]) Put(k K, v V) error {
	if !b.t.inBroadcast {
		return ErrBroadcastReadOnly
	}
	kb, err := b.keyOf(k)
	if err != nil {
		return err
	}
	b.s.entries[kb] = bcastEntry{k: k, v: v}
	return nil
}

// Remove deletes k; only in ProcessBroadcastElement.
func (b *BroadcastState[K, V]) Remove(k K) error {
	if !b.t.inBroadcast {
		return ErrBroadcastReadOnly
	}
	kb, err := b.keyOf(k)
	if err != nil {
		return err
	}
	delete(b.s.entries, kb)
	return nil
}

// Range calls fn for every entry in serialized-key order until it returns
// false.
func (b *BroadcastState[K, V]) Range(fn func(k K, v V) bool) {
	keys := make([]string, 0, len(b.s.entries))
	for k := range b.s.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e := b.s.entries[k]
		if !fn(e.k.(K), e.v.(V)) {
			return
		}
	}
}
