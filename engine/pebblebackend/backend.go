package pebblebackend

import (
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Defaults sized for a small machine with bounded memory: the block cache
// dominates a read-heavy subtask, the memtables a write-heavy one (a restore).
const (
	DefaultCacheSize    = 64 << 20
	DefaultMemTableSize = 16 << 20
)

// Options configures New.
type Options struct {
	// Dir is where the database lives. The caller owns the directory: it must
	// not hold a database yet, and it is left in place by Close.
	Dir            string
	MaxParallelism int
	// KeyGroups is the range of key groups the backend owns.
	KeyGroups keygroup.Range

	// Cache is a block cache shared with other backends of the process, so
	// that several subtasks share one memory budget; nil gives this backend a
	// cache of its own of CacheSize bytes (DefaultCacheSize when 0).
	Cache     *pebble.Cache
	CacheSize int64
	// MemTableSize is the size of one memtable (DefaultMemTableSize when 0);
	// at most two are held, one filling while the other is flushed.
	MemTableSize uint64
}

// Backend is the Pebble state backend of one operator subtask. See the
// package documentation for its key layout.
type Backend struct {
	db *pebble.DB
	// dir, fs and opts are the database's directory, file system and
	// options, with which a restore writes the tables it ingests.
	dir  string
	fs   vfs.FS
	opts *pebble.Options
	// cache holds the latest writes; wb the older ones not yet committed.
	// Every read goes through both.
	cache    writeCache
	wb       *pebble.Batch
	commitAt int
	// openIters counts the open iterators over wb, which a commit must not
	// reset from under them; a write in a map's Range callback may come
	// while one is open.
	openIters int
	// listEnds is where recently used lists end; lists which lists may
	// hold elements below the cache, isList which state ids are lists.
	listEnds listEnds
	lists    listFilter
	isList   []bool
	// kept is the iterator that iterRange reuses, keptInUse whether it is
	// open now.
	kept      *pebble.Iterator
	keptInUse bool
	maxP      int
	kgs       keygroup.Range
	// instance names the database in its checkpoints.
	instance string

	key    []byte // current key, as the key serializer wrote it
	keyEsc []byte // current key, escaped
	kg     int

	states      []*stateInfo
	stateByName map[string]*stateInfo
	timers      []*timerService
	timerByName map[string]*timerService

	// scratch for building keys and values; a Backend is used by one
	// goroutine at a time and Pebble copies what it is given.
	kbuf, vbuf, mkbuf []byte
	// spillKey is the scratch of spill, which runs inside writes that hold
	// kbuf.
	spillKey []byte
}

var (
	_ state.Backend = (*Backend)(nil)
	_ state.Sweeper = (*Backend)(nil)
)

// stateInfo is one registered state.
type stateInfo struct {
	b    *Backend
	id   uint16
	spec *state.Spec
	// sweepCursor is the last key the sweeper examined; nil to start over.
	// sweepMidRound says that the sweeper has not reached the end of the
	// state since it last spilled the state's cached writes.
	sweepCursor   []byte
	sweepMidRound bool
	// emptyLists leans positive while the lists read or appended to without
	// a remembered end have mostly been empty, negative while they have
	// mostly held elements; see listStore.probing.
	emptyLists int8
	// lowTime is at most the last-modified time of every entry of a TTL
	// state: math.MaxInt64 while it has held none, math.MinInt64 when
	// unknown (after a restore). A sweep at a time at which lowTime has not
	// expired has nothing to delete and is skipped, see sweep.go.
	lowTime int64
	// sinceSpill is the least time written since the sweeper last spilled
	// the state's cached writes; pass and passLow follow the sweeper's pass
	// from the state's first key to its last, see stateInfo.sweep.
	sinceSpill int64
	pass       bool
	passLow    int64
}

// New opens a new database in opts.Dir.
func New(opts Options) (*Backend, error) {
	if err := keygroup.Validate(1, opts.MaxParallelism); err != nil {
		return nil, fmt.Errorf("pebblebackend: %w", err)
	}
	if r := opts.KeyGroups; r.Len() == 0 || r.Start < 0 || r.End >= opts.MaxParallelism {
		return nil, fmt.Errorf("pebblebackend: key groups %v are not a non-empty range below max parallelism %d", r, opts.MaxParallelism)
	}
	if opts.Dir == "" {
		return nil, errors.New("pebblebackend: no directory given")
	}
	po := &pebble.Options{
		// State is recovered from snapshots, never from a log, as with
		// Flink's RocksDB backend; a crash loses the database as a whole.
		DisableWAL:         true,
		ErrorIfExists:      true,
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       opts.MemTableSize,
		Logger:             quietLogger{},
		FS:                 noSyncFS{vfs.Default},
	}
	if po.MemTableSize == 0 {
		po.MemTableSize = DefaultMemTableSize
	}
	if opts.Cache != nil {
		po.Cache = opts.Cache
	} else {
		size := opts.CacheSize
		if size == 0 {
			size = DefaultCacheSize
		}
		c := pebble.NewCache(size)
		// The database holds its own reference.
		defer c.Unref()
		po.Cache = c
	}
	// Value and map lookups are point reads, often of keys that do not
	// exist: bloom filters keep those from touching data blocks, and index
	// blocks large enough for a single-level index save a block per read.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		po.Levels[i].IndexBlockSize = 256 << 10
	}
	instance, err := newInstanceID()
	if err != nil {
		return nil, err
	}
	po.EnsureDefaults()
	db, err := pebble.Open(opts.Dir, po)
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: open %s: %w", opts.Dir, err)
	}
	return &Backend{
		db:          db,
		dir:         opts.Dir,
		fs:          po.FS,
		opts:        po,
		wb:          db.NewIndexedBatch(),
		commitAt:    int(min(writeBatchLimit, po.MemTableSize/4)),
		maxP:        opts.MaxParallelism,
		kgs:         opts.KeyGroups,
		instance:    instance,
		kg:          -1,
		stateByName: make(map[string]*stateInfo),
		timerByName: make(map[string]*timerService),
	}, nil
}

func (b *Backend) KeyGroups() keygroup.Range { return b.kgs }
func (b *Backend) MaxParallelism() int       { return b.maxP }
func (b *Backend) CurrentKey() []byte        { return b.key }
func (b *Backend) CurrentKeyGroup() int      { return b.kg }

// ClearCurrentKey leaves the backend without a current key.
func (b *Backend) ClearCurrentKey() {
	b.kg, b.key, b.keyEsc = -1, b.key[:0], b.keyEsc[:0]
}

func (b *Backend) SetCurrentKey(key []byte) error {
	if err := b.check(); err != nil {
		return err
	}
	kg := keygroup.Of(key, b.maxP)
	if !b.kgs.Contains(kg) {
		return fmt.Errorf("pebblebackend: key %x is in key group %d, outside the owned %v", key, kg, b.kgs)
	}
	b.kg = kg
	b.key = append(b.key[:0], key...)
	b.keyEsc = appendEscaped(b.keyEsc[:0], key)
	return nil
}

var (
	errNoKey  = fmt.Errorf("pebblebackend: %w", state.ErrNoCurrentKey)
	errClosed = errors.New("pebblebackend: backend is closed")
)

// check reports a closed backend.
func (b *Backend) check() error {
	if b.db == nil {
		return errClosed
	}
	return nil
}

// checkKey also reports a keyed access before SetCurrentKey.
func (b *Backend) checkKey() error {
	if err := b.check(); err != nil {
		return err
	}
	if b.kg < 0 {
		return errNoKey
	}
	return nil
}

// keyPrefix appends [kg][id][escaped current key].
func (b *Backend) keyPrefix(dst []byte, id uint16) ([]byte, error) {
	if err := b.checkKey(); err != nil {
		return nil, err
	}
	dst = appendPrefix(dst, b.kg, id)
	return append(dst, b.keyEsc...), nil
}

func (b *Backend) register(spec *state.Spec, ok bool, want string) (*stateInfo, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("pebblebackend: state %q of kind %s registered as %s state", spec.Name, spec.Kind, want)
	}
	if _, dup := b.stateByName[spec.Name]; dup {
		return nil, fmt.Errorf("pebblebackend: state %q declared twice", spec.Name)
	}
	id, err := b.nextID()
	if err != nil {
		return nil, err
	}
	s := &stateInfo{b: b, id: id, spec: spec, lowTime: math.MaxInt64, sinceSpill: math.MaxInt64}
	b.states = append(b.states, s)
	b.isList = append(b.isList, make([]bool, int(id)+1-len(b.isList))...)
	b.isList[id] = spec.Kind == savepoint.List
	b.stateByName[spec.Name] = s
	return s, nil
}

// nextID hands out the u16 that prefixes a state's or timer service's keys,
// in declaration order.
func (b *Backend) nextID() (uint16, error) {
	n := len(b.states) + len(b.timers)
	if n > math.MaxUint16 {
		return 0, fmt.Errorf("pebblebackend: more than %d states and timer services", math.MaxUint16+1)
	}
	return uint16(n), nil
}

func (b *Backend) RegisterValue(spec *state.Spec) (state.RawValue, error) {
	s, err := b.register(spec, spec.Kind.SingleValue(), "a value")
	if err != nil {
		return nil, err
	}
	return valueStore{s}, nil
}

func (b *Backend) RegisterList(spec *state.Spec) (state.RawList, error) {
	s, err := b.register(spec, spec.Kind == savepoint.List, "a list")
	if err != nil {
		return nil, err
	}
	return listStore{s}, nil
}

func (b *Backend) RegisterMap(spec *state.Spec) (state.RawMap, error) {
	s, err := b.register(spec, spec.Kind == savepoint.Map, "a map")
	if err != nil {
		return nil, err
	}
	return mapStore{s}, nil
}

func (b *Backend) Timers(name string, ns serializers.Serializer) (state.Timers, error) {
	if name == "" || ns == nil {
		return nil, errors.New("pebblebackend: a timer service needs a name and a namespace serializer")
	}
	if _, dup := b.timerByName[name]; dup {
		return nil, fmt.Errorf("pebblebackend: timer service %q declared twice", name)
	}
	id, err := b.nextID()
	if err != nil {
		return nil, err
	}
	t := newTimerService(b, id, name, ns)
	b.timers = append(b.timers, t)
	b.timerByName[name] = t
	return t, nil
}

// Close closes the database; the directory stays for its owner to remove.
func (b *Backend) Close() error {
	if b.db == nil {
		return nil
	}
	// Uncommitted writes are dropped with the database.
	b.dropKept()
	b.cache = writeCache{}
	err := b.wb.Close()
	if cerr := b.db.Close(); err == nil {
		err = cerr
	}
	b.db, b.wb = nil, nil
	return err
}

// get calls fn with the value stored at key, which is valid only during the
// call, and reports whether there is one. A key found nowhere is noted in the
// cache, for the write that often follows.
func (b *Backend) get(key []byte, fn func(v []byte) error) (bool, error) {
	return b.getFrom(key, true, fn)
}

// getFrom is get, which looks below the cache only when below is set: a
// caller who knows that nothing below holds the key saves the lookup.
func (b *Backend) getFrom(key []byte, below bool, fn func(v []byte) error) (bool, error) {
	if e, ok := b.cache.lookup(key); ok {
		if !e.present {
			return false, nil
		}
		return true, fn(e.val)
	}
	if below {
		// Reading through an empty batch would only add its cost.
		r := pebble.Reader(b.wb)
		if b.wb.Empty() {
			r = b.db
		}
		v, closer, err := r.Get(key)
		if err == nil {
			defer closer.Close()
			return true, fn(v)
		}
		if !errors.Is(err, pebble.ErrNotFound) {
			return false, err
		}
	}
	if b.cache.noteAbsent(key) {
		return false, b.rotate()
	}
	return false, nil
}

// iter opens an iterator over the keys that start with prefix. The
// iterator holds on to prefix: it must not change until the iterator is
// closed.
func (b *Backend) iter(prefix []byte) (*pebble.Iterator, error) {
	return b.iterRange(prefix, prefixEnd(prefix))
}

// iterRange opens an iterator over [lower, upper), which sees the writes
// made so far, not those made while it is open: it spills the cache into
// the write batch first. It is closed with b.closeIter.
//
// Making an iterator costs more than most of the reads it serves, so one
// is kept between calls and given new bounds, which also brings its view
// of the write batch up to date. Its view of the database stays that of
// when it was made, so it is dropped at each commit; until then nothing
// else writes to the database. A second iterator, opened while the kept
// one is in use, is made anew.
func (b *Backend) iterRange(lower, upper []byte) (*pebble.Iterator, error) {
	if err := b.spillAll(); err != nil {
		return nil, err
	}
	return b.iterBelow(lower, upper)
}

// iterBelow is iterRange without the spill: it sees the write batch and the
// database but not the cache. It serves iterators over keys the cache never
// holds (timer keys) or whose cached writes they account for.
func (b *Backend) iterBelow(lower, upper []byte) (*pebble.Iterator, error) {
	opts := pebble.IterOptions{LowerBound: lower, UpperBound: upper}
	if b.kept != nil && !b.keptInUse {
		b.kept.SetOptions(&opts)
		b.keptInUse = true
		b.openIters++
		return b.kept, nil
	}
	it, err := b.wb.NewIter(&opts)
	if err != nil {
		return nil, err
	}
	if b.kept == nil {
		b.kept, b.keptInUse = it, true
	}
	b.openIters++
	return it, nil
}

// closeIter closes an iterator of iterRange, or puts the kept one back, and
// keeps the first error.
func (b *Backend) closeIter(it *pebble.Iterator, err *error) {
	b.openIters--
	if it != b.kept {
		closeIter(it, err)
		return
	}
	b.keptInUse = false
	if ierr := it.Error(); ierr != nil {
		// An iterator in error is not reused.
		b.dropKept()
		if *err == nil {
			*err = ierr
		}
	}
}

// dropKept closes the kept iterator.
func (b *Backend) dropKept() {
	if b.kept != nil {
		_ = b.kept.Close()
		b.kept, b.keptInUse = nil, false
	}
}

// closeIter closes it and keeps the first error.
func closeIter(it *pebble.Iterator, err *error) {
	if cerr := it.Close(); *err == nil {
		*err = cerr
	}
}

// quietLogger drops Pebble's informational messages, which every backend
// would otherwise print on open, and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}

func (quietLogger) Errorf(format string, args ...any) { pebble.DefaultLogger.Errorf(format, args...) }

func (quietLogger) Fatalf(format string, args ...any) { pebble.DefaultLogger.Fatalf(format, args...) }
