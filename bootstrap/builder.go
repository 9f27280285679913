package bootstrap

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/stateproc/stateproc/internal/extsort"
	"github.com/stateproc/stateproc/internal/workdir"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Options say where a bootstrap writes and how.
type Options struct {
	// Out is the target directory; Force replaces it if it exists.
	Out   string
	Force bool
	// DryRun reads and checks everything, duplicates included, and writes
	// no savepoint; Out, when set, is checked.
	DryRun bool
	// Input is the local directory the data comes from, if any: the target
	// must not be it, lie inside it or contain it.
	Input string
	// Now, in epoch milliseconds, is the savepoint's creation time and the
	// last-modified time of every entry of a TTL state that comes without
	// one.
	Now int64
	// ID is the savepoint's id; 1 when 0.
	ID uint64
	// Lineage says where the state comes from, for the metadata's lineage.
	Lineage string
	// Memory bounds the sort of keyed entries, in bytes: DefaultMemory
	// when 0. Beyond it, entries spill to files.
	Memory int
	// SpillDir receives the spill files; the default is a temporary
	// directory beside Out (in the system's when Out is not set).
	SpillDir string
	// Workers is the number of files read, or sort chunks filled, at once:
	// one per core when 0.
	Workers int
	// Compress writes zstd blocks.
	Compress bool
	// MaxBadRows is how many bad rows are reported before the bootstrap
	// stops looking for more: DefaultMaxBadRows when 0.
	MaxBadRows int
	// Progress, when set, is called as Load advances, with the bytes of
	// dataset files read so far and the bytes of all of them, once per
	// file, one call at a time. It is for a progress bar.
	Progress func(done, total int64)
}

const (
	// DefaultMemory keeps a bootstrap's resident memory at a few hundred
	// MiB however large its input.
	DefaultMemory = 64 << 20
	// DefaultMaxBadRows reports enough bad rows to see a pattern.
	DefaultMaxBadRows = 20
)

// Builder makes one savepoint. Entries are added through Add (and the
// typed functions that call it) or Load, from any number of goroutines;
// Commit sorts them, writes the savepoint and publishes it. Close must be
// called in every case: it removes what an uncommitted bootstrap wrote.
type Builder struct {
	opts   Options
	meta   *savepoint.Metadata
	shapes [][]shape
	// refs lists the refs of each operator, as Metadata.Refs does.
	refs    [][]savepoint.StateRef
	targets map[targetName]*target
	spill   *spilling
	out     *rewrite.Output
	// spillDir is the directory the builder made for spill files, removed
	// by Close; nil when the output's own is used.
	spillDir *workdir.Dir
	bad      badRows

	mu      sync.Mutex
	sources []string
	calls   map[*target]int
	done    bool
}

type targetName struct{ uid, name string }

// target is one state of the job that entries are added to: a keyed
// state, a timer service, an operator state or a broadcast state.
type target struct {
	op   int
	uid  string
	name string
	// kind is the keyed state's kind, or timers, operator, broadcast.
	kind     string
	keyed    *savepoint.KeyedState
	timers   *savepoint.TimerService
	opState  *savepoint.OperatorState
	bcast    *savepoint.BroadcastState
	operator *savepoint.Operator
	// ref numbers the state among the operator's refs (see record).
	ref   int
	shape shape
	rows  atomic.Int64
	files atomic.Int64
	// layout is the columns of the target's datasets.
	layout layout

	// The serializers of Go values, restored when first needed.
	serOnce                sync.Once
	serErr                 error
	key, ns, mapKey, value serializers.Serializer

	// Operator and broadcast state, gathered in memory: the metadata holds
	// them.
	mu       sync.Mutex
	elements []element
	entries  []bentry
}

// Kinds of targets besides the keyed state kinds.
const (
	KindTimers    = "timers"
	KindOperator  = "operator"
	KindBroadcast = "broadcast"
)

// New starts a savepoint of the job described by manifest, at the
// parallelism and max parallelism of each of its operators, with every
// state empty. Unless DryRun, it takes the target's lock and stages the
// output beside it.
func New(manifest savepoint.Manifest, opts Options) (*Builder, error) {
	ops, err := manifest.Model()
	if err != nil {
		return nil, rewrite.Refusef("the job: %v", err)
	}
	if opts.ID == 0 {
		opts.ID = 1
	}
	if opts.Memory <= 0 {
		opts.Memory = DefaultMemory
	}
	if opts.Workers <= 0 {
		opts.Workers = workers.Default()
	}
	if opts.MaxBadRows <= 0 {
		opts.MaxBadRows = DefaultMaxBadRows
	}
	if len(ops) > math.MaxUint16 {
		return nil, rewrite.Refusef("the job has %d operators, more than a bootstrap takes (%d)", len(ops), math.MaxUint16)
	}
	// The data has passed no job: the savepoint records no watermark, so
	// that a job restored from it starts its event time afresh.
	meta := &savepoint.Metadata{ID: opts.ID, CreatedAt: opts.Now, Watermark: math.MinInt64, Operators: ops}
	if opts.Lineage != "" {
		meta.Lineage = []string{opts.Lineage}
	}
	b := &Builder{opts: opts, meta: meta, targets: map[targetName]*target{}, calls: map[*target]int{}, bad: badRows{limit: opts.MaxBadRows}}
	if err := b.plan(); err != nil {
		return nil, err
	}
	if err := b.stage(); err != nil {
		b.Close()
		return nil, err
	}
	maxP := make([]int, len(ops))
	for op := range ops {
		if len(b.refs[op]) > 0 {
			maxP[op] = ops[op].MaxParallelism
		}
	}
	b.spill = newSpilling(b.spillPath(), maxP, opts.Workers, opts.Memory)
	return b, nil
}

// plan lists the targets of the job and sizes its operator state.
func (b *Builder) plan() error {
	for op := range b.meta.Operators {
		o := &b.meta.Operators[op]
		refs := b.meta.Refs(op)
		if len(refs) > math.MaxUint16 {
			return rewrite.Refusef("operator %q has %d states and timer services, more than a bootstrap takes", o.UID, len(refs))
		}
		var shapes []shape
		add := func(t *target) error {
			n := targetName{o.UID, t.name}
			if _, dup := b.targets[n]; dup {
				return rewrite.Refusef("operator %q has two states named %q, whose data cannot be told apart", o.UID, t.name)
			}
			t.op, t.uid, t.operator = op, o.UID, o
			b.targets[n] = t
			return nil
		}
		for i, ref := range refs {
			t := &target{ref: i}
			if ref.Timer {
				t.timers, t.kind, t.name = b.meta.TimerService(ref), KindTimers, b.meta.RefName(ref)
				t.shape = shape{timer: true}
			} else {
				t.keyed = b.meta.KeyedState(ref)
				t.kind, t.name = t.keyed.Kind.String(), t.keyed.Name
				t.shape = shape{isMap: t.keyed.Kind == savepoint.Map, isList: t.keyed.Kind == savepoint.List}
			}
			shapes = append(shapes, t.shape)
			if err := add(t); err != nil {
				return err
			}
		}
		b.shapes = append(b.shapes, shapes)
		b.refs = append(b.refs, refs)
		for i := range o.OperatorStates {
			s := &o.OperatorStates[i]
			s.Subtasks = make([][][]byte, o.Parallelism)
			if err := add(&target{kind: KindOperator, name: s.Name, opState: s}); err != nil {
				return err
			}
		}
		for i := range o.BroadcastStates {
			s := &o.BroadcastStates[i]
			if err := add(&target{kind: KindBroadcast, name: s.Name, bcast: s}); err != nil {
				return err
			}
		}
	}
	return nil
}

// stage creates the output, or in a dry run checks the target; and makes
// the spill directory unless the output's is used.
func (b *Builder) stage() error {
	var err error
	switch {
	case b.opts.DryRun && b.opts.Out != "":
		err = rewrite.CheckTarget(b.opts.Input, b.opts.Out, b.opts.Force)
	case !b.opts.DryRun:
		// Operator and broadcast state are filled in at Commit; the writer
		// checks the metadata again before it writes it.
		b.out, err = rewrite.Create(context.Background(), b.opts.Input, b.meta, rewrite.Options{Out: b.opts.Out, Force: b.opts.Force, Writer: rewrite.BlockOptions(b.opts.Compress)})
	}
	if err != nil {
		return err
	}
	switch {
	case b.opts.SpillDir != "":
		b.spillDir, err = workdir.Create(b.opts.SpillDir, "stateproc-bootstrap-")
	case b.out != nil:
		var dir string
		dir, err = b.out.TempDir()
		b.opts.SpillDir = dir
	default:
		b.spillDir, err = workdir.Create("", "stateproc-bootstrap-")
	}
	return err
}

func (b *Builder) spillPath() string {
	if b.spillDir != nil {
		return b.spillDir.Path
	}
	return b.opts.SpillDir
}

// Metadata is the savepoint's metadata as it stands: the job's operators
// and states. Callers must not modify it.
func (b *Builder) Metadata() *savepoint.Metadata { return b.meta }

// lookup finds the target uid/name.
func (b *Builder) lookup(uid, name string) (*target, error) {
	t, ok := b.targets[targetName{uid, name}]
	if !ok {
		if _, ok := b.meta.Operator(uid); !ok {
			return nil, rewrite.Refusef("the job has no operator %q", uid)
		}
		return nil, rewrite.Refusef("operator %q of the job has no state %q", uid, name)
	}
	return t, nil
}

// source registers where entries come from, for messages; its number
// orders entries that are otherwise equal.
func (b *Builder) source(name string) (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return 0, errors.New("bootstrap: entries added after Commit or Close")
	}
	if len(b.sources) >= maxSources {
		return 0, fmt.Errorf("bootstrap: more than %d sources of entries", maxSources)
	}
	b.sources = append(b.sources, name)
	return uint64(len(b.sources) - 1), nil
}

func (b *Builder) sourceName(i uint64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i < uint64(len(b.sources)) {
		return b.sources[i]
	}
	return fmt.Sprintf("source %d", i)
}

// sink adds the entries of one target from one source.
type sink struct {
	b      *Builder
	t      *target
	source uint64
	sp     *extsort.Spiller
	rec    []byte
}

// open starts adding entries to t from the source named name.
func (b *Builder) open(ctx context.Context, t *target, name string) (*sink, error) {
	src, err := b.source(name)
	if err != nil {
		return nil, err
	}
	s := &sink{b: b, t: t, source: src}
	if t.keyed != nil || t.timers != nil {
		if s.sp, err = b.spill.take(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *sink) close() {
	if s.sp != nil {
		s.b.spill.give(s.sp)
		s.sp = nil
	}
}

// noIndex says a list element has no index of its own.
const noIndex = -1

// keyed adds an entry of a keyed state, or with value nil a timer at
// timestamp. For a list state, index orders the elements of a key
// (noIndex: the order they are added in); for a TTL state, lastModified
// is the entry's time. key, ns, mapKey and value are the serializers'
// bytes.
func (s *sink) keyed(row int64, key, ns, mapKey []byte, index int64, lastModified int64, value []byte, timestamp int64) error {
	t := s.t
	kg := keygroup.Of(key, t.operator.MaxParallelism)
	r := s.rec[:0]
	if t.shape.timer {
		r = binary.BigEndian.AppendUint64(r, uint64(timestamp)^timeSignBit)
	}
	r = appendEsc(r, key)
	r = appendEsc(r, ns)
	if t.shape.isMap {
		r = appendEsc(r, mapKey)
	}
	if t.shape.isList {
		r = binary.BigEndian.AppendUint64(r, uint64(index+1))
	}
	if row < 0 || row > maxRow {
		return fmt.Errorf("bootstrap: %s: row %d, beyond the %d rows a source may hold", s.b.sourceName(s.source), row, int64(maxRow))
	}
	r = binary.BigEndian.AppendUint64(r, s.source<<rowBits|uint64(row))
	k := len(r)
	if !t.shape.timer {
		if t.keyed.TTL != nil {
			r = binary.BigEndian.AppendUint64(r, uint64(lastModified))
		}
		r = append(r, value...)
	}
	s.rec = r
	t.rows.Add(1)
	return s.sp.Add(s.b.spill.bucketOf(t.op, kg), class(kg, t.ref), r[:k], r[k:])
}

// element is an element of operator list state, and where it came from.
type element struct {
	subtask     int
	index       int64
	source, row uint64
	value       []byte
}

// operatorElement adds an element to the list of subtask; index orders
// the elements of a subtask (noIndex: the order they are added in).
func (s *sink) operatorElement(row int64, subtask int, index int64, value []byte) {
	t := s.t
	t.mu.Lock()
	t.elements = append(t.elements, element{subtask: subtask, index: index, source: s.source, row: uint64(row), value: value})
	t.mu.Unlock()
	t.rows.Add(1)
}

// bentry is an entry of broadcast state, and where it came from.
type bentry struct {
	key, value  []byte
	source, row uint64
}

func (s *sink) broadcastEntry(row int64, key, value []byte) {
	t := s.t
	t.mu.Lock()
	t.entries = append(t.entries, bentry{key: key, value: value, source: s.source, row: uint64(row)})
	t.mu.Unlock()
	t.rows.Add(1)
}

// Close removes the staged output and the spill files unless the
// savepoint was committed, and releases the target's lock.
func (b *Builder) Close() error {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
	var errs []error
	if b.spill != nil && b.spill.spillers != nil {
		_, _, err := b.spill.finish()
		errs = append(errs, err)
	}
	if b.spillDir != nil {
		errs = append(errs, b.spillDir.Remove())
	}
	if b.out != nil {
		errs = append(errs, b.out.Close())
		b.out = nil
	}
	return errors.Join(errs...)
}
