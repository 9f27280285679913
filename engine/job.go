package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
)

// ErrBuild is wrapped by every error in a job graph.
var ErrBuild = errors.New("engine: invalid job")

// Job is a dataflow graph under construction. Builder functions never fail;
// Validate (called by Run and Manifest) reports what is wrong with the
// graph, so a job can be written as a straight sequence of calls.
type Job struct {
	name   string
	nodes  []*node
	maxPar int
	defPar int
}

// JobOption configures a Job.
type JobOption func(*Job)

// DefaultParallelism sets the parallelism of operators that do not set
// their own.
func DefaultParallelism(p int) JobOption { return func(j *Job) { j.defPar = p } }

// DefaultMaxParallelism sets the max parallelism of keyed operators that do
// not set their own; without it, it is derived from the parallelism as
// keygroup.DefaultMaxParallelism does.
func DefaultMaxParallelism(m int) JobOption { return func(j *Job) { j.maxPar = m } }

// NewJob starts a job graph.
func NewJob(name string, opts ...JobOption) *Job {
	j := &Job{name: name, defPar: 1}
	for _, o := range opts {
		o(j)
	}
	return j
}

// Name returns the job's name.
func (j *Job) Name() string { return j.name }

type nodeKind uint8

const (
	sourceNode nodeKind = iota + 1
	keyedNode
	sinkNode
	// statelessNode: Map, Filter, FlatMap and Union.
	statelessNode
)

// node is the type-erased part of an operator; the typed parts live in the
// closures that build its subtasks.
type node struct {
	id             int
	kind           nodeKind
	uid, name      string
	parallelism    int
	maxParallelism int
	// inputs[i] is the edge feeding input i: input 0 is the main input,
	// input 1 the broadcast input of a broadcast-connected operator.
	inputs  []*edge
	outputs []*edge
	key     serializers.Serializer
	states  []state.Descriptor
	bcast   []broadcastSpec
	opState []operatorStateSpec
	// watermarks is how a source derives watermarks.
	watermarks Watermarks
	// stateful operators must have a uid.
	stateful bool
	run      func(t *task) error
	// recover runs once per run with the restored elements of every
	// subtask's first operator state (sinks).
	recover func(ctx context.Context, saved [][]byte) error
	// maxParallelismSet records that MaxParallelism was given explicitly,
	// so that a restore may not change it.
	maxParallelismSet bool
	// timerNS serializes the namespaces of a keyed operator's timers; nil
	// for the void namespace.
	timerNS serializers.Serializer
	// sides are the side outputs that downstream operators read, by tag.
	sides map[string]*sideSpec
	// checks are the operator's own checks of its settings (Check).
	checks []func() error
}

func (n *node) label() string {
	if n.uid != "" {
		return fmt.Sprintf("%q", n.uid)
	}
	return fmt.Sprintf("%s (no uid)", n.name)
}

type edgeKind uint8

const (
	forwardEdge edgeKind = iota + 1
	rebalanceEdge
	hashEdge
	broadcastEdge
)

type edge struct {
	from, to *node
	kind     edgeKind
	input    int
	// channels builds the typed channels of the edge, [from subtask][to
	// subtask], when the job runs.
	channels func(capacity int) any
	// keyBytes appends the serialized key of a record (hash edges); it is
	// typed, hence any.
	keyBytes any
	// side is the id of the side output the edge carries; empty for the
	// main output.
	side string
}

func (j *Job) addNode(kind nodeKind, name string, opts []OperatorOption) *node {
	n := &node{id: len(j.nodes), kind: kind, name: name}
	for _, o := range opts {
		o(n)
	}
	if n.parallelism == 0 {
		n.parallelism = j.defPar
	}
	j.nodes = append(j.nodes, n)
	return n
}

// OperatorOption configures an operator.
type OperatorOption func(*node)

// UID sets the operator's stable id: the name its state has in checkpoints
// and savepoints. Every stateful operator needs one.
func UID(uid string) OperatorOption { return func(n *node) { n.uid = uid } }

// Name sets the operator's human-readable name.
func Name(name string) OperatorOption { return func(n *node) { n.name = name } }

// Parallelism sets the number of subtasks.
func Parallelism(p int) OperatorOption { return func(n *node) { n.parallelism = p } }

// MaxParallelism sets the number of key groups of a keyed operator.
func MaxParallelism(m int) OperatorOption {
	return func(n *node) { n.maxParallelism, n.maxParallelismSet = m, true }
}

// WithState declares the keyed states a process function uses. Handles can
// only be obtained, in Open, for declared descriptors.
func WithState(ds ...state.Descriptor) OperatorOption {
	return func(n *node) { n.states = append(n.states, ds...) }
}

// Check adds a check of the operator's settings that Validate runs, so that
// a library building operators on the engine (windows, for instance)
// refuses bad settings when the job is built, not when it first opens.
func Check(check func() error) OperatorOption {
	return func(n *node) { n.checks = append(n.checks, check) }
}

// Stream is a stream of records of type T.
type Stream[T any] struct {
	job  *Job
	node *node
	// side is the id of the side output of node this stream is; empty
	// for its main output.
	side string
}

// KeyedStream is a stream partitioned by a key of type K.
type KeyedStream[K, T any] struct {
	in     Stream[T]
	key    func(T) K
	keySer serializers.Of[K]
}

// KeyBy partitions s by key: records with the same key go to the same
// subtask, chosen through the key group of the key's serialized bytes.
func KeyBy[K, T any](s Stream[T], key func(T) K, keySer serializers.Of[K]) KeyedStream[K, T] {
	return KeyedStream[K, T]{in: s, key: key, keySer: keySer}
}

func connect[T any](from Stream[T], to *node, kind edgeKind, input int, keyBytes any) {
	e := &edge{from: from.node, to: to, kind: kind, input: input, keyBytes: keyBytes, side: from.side}
	e.channels = func(capacity int) any {
		chans := make([][]chan *batch[T], e.from.parallelism)
		for i := range chans {
			chans[i] = make([]chan *batch[T], e.to.parallelism)
			for k := range chans[i] {
				chans[i][k] = make(chan *batch[T], capacity)
			}
		}
		return chans
	}
	for len(to.inputs) <= input {
		to.inputs = append(to.inputs, nil)
	}
	to.inputs[input] = e
	from.node.outputs = append(from.node.outputs, e)
}

// keyEncoder returns the function that appends a record's key bytes.
func keyEncoder[K, T any](ks KeyedStream[K, T]) func(dst []byte, v T) ([]byte, error) {
	return func(dst []byte, v T) ([]byte, error) { return ks.keySer.Append(dst, ks.key(v)) }
}

// Validate checks the whole graph: uids present on stateful operators and
// unique, parallelism within bounds, descriptor names unique per operator,
// operator list states declared only on process operators, and each
// operator's own checks (Check).
func (j *Job) Validate() error {
	uids := map[string]*node{}
	for _, n := range j.nodes {
		if n.stateful && n.uid == "" {
			return fmt.Errorf("%w: stateful operator %s has no uid", ErrBuild, n.name)
		}
		if n.uid != "" {
			if other, dup := uids[n.uid]; dup {
				return fmt.Errorf("%w: uid %q used by both %s and %s", ErrBuild, n.uid, other.name, n.name)
			}
			uids[n.uid] = n
		}
		if n.kind == keyedNode {
			if n.maxParallelism == 0 {
				n.maxParallelism = j.maxPar
			}
			if n.maxParallelism == 0 {
				n.maxParallelism = keygroup.DefaultMaxParallelism(n.parallelism)
			}
			if err := keygroup.Validate(n.parallelism, n.maxParallelism); err != nil {
				return fmt.Errorf("%w: operator %s: %v", ErrBuild, n.label(), err)
			}
		} else if n.parallelism < 1 {
			return fmt.Errorf("%w: operator %s: parallelism %d", ErrBuild, n.label(), n.parallelism)
		}
		if n.kind == sourceNode {
			if err := n.watermarks.validate(); err != nil {
				return fmt.Errorf("%w: source %s: %v", ErrBuild, n.label(), err)
			}
		}
		names := map[string]bool{}
		for _, d := range n.states {
			s := d.Spec()
			if err := s.Validate(); err != nil {
				return fmt.Errorf("%w: operator %s: %v", ErrBuild, n.label(), err)
			}
			if names[s.Name] {
				return fmt.Errorf("%w: operator %s declares state %q twice", ErrBuild, n.label(), s.Name)
			}
			names[s.Name] = true
		}
		for _, b := range n.bcast {
			if names[b.name] {
				return fmt.Errorf("%w: operator %s declares state %q twice", ErrBuild, n.label(), b.name)
			}
			names[b.name] = true
		}
		for _, s := range n.opState {
			if err := s.validate(n); err != nil {
				return err
			}
			if names[s.name] {
				if s.name == subtaskClockStateName {
					return fmt.Errorf("%w: operator %s: the state name %q is the engine's", ErrBuild, n.label(), s.name)
				}
				return fmt.Errorf("%w: operator %s declares state %q twice", ErrBuild, n.label(), s.name)
			}
			names[s.name] = true
		}
		if err := n.validateSides(); err != nil {
			return err
		}
		for _, check := range n.checks {
			if err := check(); err != nil {
				return fmt.Errorf("%w: operator %s: %v", ErrBuild, n.label(), err)
			}
		}
		for _, e := range n.outputs {
			if e.kind == forwardEdge && e.to.parallelism != n.parallelism {
				return fmt.Errorf("%w: forward edge from %s (parallelism %d) to %s (parallelism %d)", ErrBuild, n.label(), n.parallelism, e.to.label(), e.to.parallelism)
			}
		}
	}
	return nil
}
