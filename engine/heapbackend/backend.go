package heapbackend

import (
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Options configures a Backend.
type Options struct {
	MaxParallelism int
	// KeyGroups is the range of key groups the subtask owns.
	KeyGroups keygroup.Range
}

var (
	errClosed = errors.New("heapbackend: backend is closed")
	errNoKey  = fmt.Errorf("heapbackend: %w", state.ErrNoCurrentKey)
)

// Backend keeps the keyed state of one operator subtask in memory. It
// implements state.Backend and is used by one goroutine at a time.
type Backend struct {
	maxP int
	kgs  keygroup.Range

	key []byte
	// prefix is the current key escaped for record identifiers (appendKey),
	// computed once per SetCurrentKey rather than on every access.
	prefix []byte
	// gi is the index of the current key group in the owned range; -1 before
	// the first SetCurrentKey.
	gi int

	stores   map[string]store
	declared []*state.Spec // in declaration order
	timers   map[string]*timerService
	closed   bool
}

var _ state.Backend = (*Backend)(nil)

// New returns an empty backend for the key groups in opts.
func New(opts Options) (*Backend, error) {
	if err := keygroup.Validate(1, opts.MaxParallelism); err != nil {
		return nil, fmt.Errorf("heapbackend: %w", err)
	}
	r := opts.KeyGroups
	if r.Len() == 0 || r.Start < 0 || r.End >= opts.MaxParallelism {
		return nil, fmt.Errorf("heapbackend: key-group range %v is empty or outside 0-%d", r, opts.MaxParallelism-1)
	}
	return &Backend{
		maxP:   opts.MaxParallelism,
		kgs:    r,
		gi:     -1,
		stores: make(map[string]store),
		timers: make(map[string]*timerService),
	}, nil
}

func (b *Backend) KeyGroups() keygroup.Range { return b.kgs }
func (b *Backend) MaxParallelism() int       { return b.maxP }

// SetCurrentKey copies key: callers reuse their buffers.
func (b *Backend) SetCurrentKey(key []byte) error {
	if b.closed {
		return errClosed
	}
	kg := keygroup.Of(key, b.maxP)
	if !b.kgs.Contains(kg) {
		return fmt.Errorf("heapbackend: key %q is in key group %d, outside this backend's key groups %v", key, kg, b.kgs)
	}
	b.key = append(b.key[:0], key...)
	b.prefix = appendKey(b.prefix[:0], key)
	b.gi = kg - b.kgs.Start
	return nil
}

// ClearCurrentKey leaves the backend without a current key.
func (b *Backend) ClearCurrentKey() {
	b.key, b.prefix, b.gi = b.key[:0], b.prefix[:0], -1
}

// CurrentKey returns the backend's copy of the current key; callers must not
// modify it.
func (b *Backend) CurrentKey() []byte { return b.key }

// CurrentKeyGroup returns -1 before the first SetCurrentKey.
func (b *Backend) CurrentKeyGroup() int {
	if b.gi < 0 {
		return -1
	}
	return b.kgs.Start + b.gi
}

func (b *Backend) RegisterValue(spec *state.Spec) (state.RawValue, error) {
	if err := b.declare(spec, spec.Kind.SingleValue(), "RegisterValue"); err != nil {
		return nil, err
	}
	s := &valueStore{newTable[state.Cell](b, spec)}
	b.stores[spec.Name] = s
	return s, nil
}

func (b *Backend) RegisterList(spec *state.Spec) (state.RawList, error) {
	if err := b.declare(spec, spec.Kind == savepoint.List, "RegisterList"); err != nil {
		return nil, err
	}
	s := &listStore{newTable[[]state.Cell](b, spec)}
	b.stores[spec.Name] = s
	return s, nil
}

func (b *Backend) RegisterMap(spec *state.Spec) (state.RawMap, error) {
	if err := b.declare(spec, spec.Kind == savepoint.Map, "RegisterMap"); err != nil {
		return nil, err
	}
	s := &mapStore{table: newTable[[]mapEntry](b, spec)}
	b.stores[spec.Name] = s
	return s, nil
}

func (b *Backend) declare(spec *state.Spec, kindOK bool, via string) error {
	if b.closed {
		return errClosed
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	if !kindOK {
		return fmt.Errorf("heapbackend: state %q of kind %s cannot be declared with %s", spec.Name, spec.Kind, via)
	}
	if _, dup := b.stores[spec.Name]; dup {
		return fmt.Errorf("heapbackend: state %q is declared twice", spec.Name)
	}
	b.declared = append(b.declared, spec)
	return nil
}

func (b *Backend) Timers(name string, ns serializers.Serializer) (state.Timers, error) {
	if b.closed {
		return nil, errClosed
	}
	if name == "" || ns == nil {
		return nil, fmt.Errorf("heapbackend: a timer service needs a name and a namespace serializer")
	}
	if _, dup := b.timers[name]; dup {
		return nil, fmt.Errorf("heapbackend: timer service %q is declared twice", name)
	}
	t := newTimerService(b, name, ns)
	b.timers[name] = t
	return t, nil
}

// Close drops the state; the backend cannot be used afterwards.
func (b *Backend) Close() error {
	b.closed = true
	b.gi = -1
	for _, s := range b.stores {
		s.drop()
	}
	for _, t := range b.timers {
		t.drop()
	}
	b.stores, b.timers, b.declared = nil, nil, nil
	return nil
}
