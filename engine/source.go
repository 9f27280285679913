package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Source is a bounded or unbounded input divided into a fixed set of splits,
// as a Kafka topic is divided into partitions. Each split is read in order
// by one source subtask; the position reached in each split is the source's
// operator state, so a restored job resumes exactly where the checkpoint
// was taken, at any parallelism.
type Source[T any] interface {
	// Splits returns the number of splits; it must not change between runs.
	Splits() int
	// Open returns a reader of split positioned after offset records. ctx
	// is the subtask's: it is done when the job stops or fails.
	Open(ctx context.Context, split int, offset int64) (SplitReader[T], error)
}

// SplitReader reads one split in order.
type SplitReader[T any] interface {
	// Next returns the next record and its event time (epoch ms), or
	// ok=false at the end of the split. A split that has no record now but
	// may have one later (an unbounded input) returns ErrNothingAvailable;
	// the source asks again a little later, and reads its other splits
	// meanwhile. Next must not block for long: a source subtask also
	// serves checkpoints and its other splits between two calls; ctx is done
	// when the job stops or fails.
	Next(ctx context.Context) (v T, eventTime int64, ok bool, err error)
}

// ErrNothingAvailable is returned by SplitReader.Next when the split has
// no record yet, as Flink's InputStatus.NOTHING_AVAILABLE.
var ErrNothingAvailable = errors.New("engine: no record available yet")

// Watermarks configures how a source derives watermarks from event times.
//
// A split's progress is the largest event time read from it, and its
// watermark that progress minus OutOfOrderness, minus one, so an event
// that lags by no more than OutOfOrderness is never behind it. A source
// subtask reads the split whose progress is lowest first, so its splits
// advance together in event time, and its watermark is the lowest of its
// splits'. No record is dropped for being late: one that lags further
// reaches ProcessElement with a Timestamp at or behind CurrentWatermark,
// and an event-time timer it registers there fires when the watermark
// next advances.
type Watermarks struct {
	// OutOfOrderness is how far an event may lag behind the largest event
	// time already read from its split; event times are milliseconds, so
	// it counts in whole milliseconds.
	OutOfOrderness time.Duration
	// Every is how many records of a split a source subtask reads between
	// two watermarks it sends because of that split; it also sends one
	// when a split ends or stops. 0 means 256.
	Every int
	// MaxAdvance, when positive, is how far one record can
	// move its split's progress: a record dated further ahead moves it by
	// MaxAdvance, and the records after it move it on from there. One
	// future-dated record then cannot fire every event-time timer, nor,
	// under DeterministicTime, move processing time, by more than that.
	// The first record of a split sets its progress as it is.
	MaxAdvance time.Duration
	// IdleTimeout, when positive, marks a split idle once it has returned
	// ErrNothingAvailable for that long (wall-clock time): an idle split
	// does not hold the watermark back, and a subtask whose splits are all
	// idle marks its outputs idle, so that they hold back no downstream
	// watermark either. A record makes the split active again.
	IdleTimeout time.Duration
	// AlignmentGroup, when set, aligns the watermarks of every source
	// subtask of the sources that name the same group, as Flink's watermark
	// alignment does: a subtask whose watermark is more than MaxDrift
	// ahead of the group's lowest stops reading until the
	// others catch up. Subtasks that have stopped, ended or gone idle do
	// not hold the group back. Which records a subtask reads, and in what
	// order, does not depend on it: only when.
	AlignmentGroup string
	MaxDrift       time.Duration
}

func (w Watermarks) validate() error {
	switch {
	case w.OutOfOrderness < 0:
		return fmt.Errorf("out-of-orderness %v", w.OutOfOrderness)
	case w.Every < 0:
		return fmt.Errorf("watermark interval %d", w.Every)
	case w.MaxAdvance < 0:
		return fmt.Errorf("max advance %v", w.MaxAdvance)
	case w.IdleTimeout < 0:
		return fmt.Errorf("idle timeout %v", w.IdleTimeout)
	case w.MaxDrift < 0:
		return fmt.Errorf("max drift %v", w.MaxDrift)
	case w.MaxDrift > 0 && w.AlignmentGroup == "":
		return fmt.Errorf("max drift %v without an alignment group", w.MaxDrift)
	}
	return nil
}

// splitPositionSchema is the Avro schema of the source's operator state:
// one element per split, so that the toolkit can show where a source
// stood without the job's code.
// MaxEventTime holds the split's progress: its largest event time, as far as
// MaxAdvance let records move it.
const splitPositionSchema = `{"type":"record","name":"SplitPosition","namespace":"stateproc.engine","fields":[
 {"name":"split","type":"int"},
 {"name":"offset","type":"long"},
 {"name":"max_event_time","type":"long"}]}`

type splitPosition struct {
	Split        int32 `avro:"split"`
	Offset       int64 `avro:"offset"`
	MaxEventTime int64 `avro:"max_event_time"`
}

// sourceStateName is the operator state every source keeps.
const sourceStateName = "splits"

var splitPositionSerializer = mustAvro[splitPosition](splitPositionSchema)

// mustAvro gives the serializer of a built-in schema, parsed on first use:
// these serializers are package variables, and parsing them at package
// init would slow the start of every program that links the engine,
// stateproc's commands included.
func mustAvro[T any](schema string) serializers.Of[T] {
	return lazyAvro[T](sync.OnceValue(func() serializers.Of[T] {
		s, err := serializers.Avro[T](schema)
		if err != nil {
			panic(fmt.Sprintf("engine: built-in schema: %v", err))
		}
		return s
	}))
}

type lazyAvro[T any] func() serializers.Of[T]

func (l lazyAvro[T]) Snapshot() serializers.Snapshot { return l().Snapshot() }
func (l lazyAvro[T]) AppendAny(dst []byte, v any) ([]byte, error) {
	return l().AppendAny(dst, v)
}
func (l lazyAvro[T]) DecodeAny(src []byte) (any, error)      { return l().DecodeAny(src) }
func (l lazyAvro[T]) Append(dst []byte, v T) ([]byte, error) { return l().Append(dst, v) }
func (l lazyAvro[T]) Decode(src []byte) (T, error)           { return l().Decode(src) }

// FromSource adds a source to the job. Its operator state is the position
// in every split, a union: on restore every subtask takes the splits a fresh
// start gives it, split s to subtask s mod parallelism, so that a subtask
// reads the same splits before and after a restore at the same
// parallelism, and its watermark, the lowest of its splits', is the same.
func FromSource[T any](j *Job, src Source[T], wm Watermarks, opts ...OperatorOption) Stream[T] {
	n := j.addNode(sourceNode, "source", opts)
	n.stateful = true
	n.opState = append(n.opState, operatorStateSpec{
		name:         sourceStateName,
		distribution: savepoint.Union,
		element:      splitPositionSerializer,
	})
	if wm.Every == 0 {
		wm.Every = 256
	}
	n.watermarks = wm
	n.run = func(t *task) error { return runSource(t, src, wm) }
	return Stream[T]{job: j, node: n}
}

// splitCursor is one split being read by a source subtask.
type splitCursor[T any] struct {
	pos    splitPosition
	reader SplitReader[T]
	// limit is the offset at which the split pauses (the stop position);
	// -1 when it runs to its end.
	limit int64
	ended bool
	// held is the split's first record, read ahead under DeterministicTime
	// so that the subtask's first watermark goes out before any record.
	held *heldRecord[T]
	// Splits that returned ErrNothingAvailable are tried again at retry;
	// since is when the current run of them began.
	retry, since time.Time
	backoff      time.Duration
	idle         bool
}

type heldRecord[T any] struct {
	v  T
	ts int64
}

func (c *splitCursor[T]) paused() bool { return c.limit >= 0 && c.pos.Offset >= c.limit }

// observe moves the split's progress to the event time ts, by at most
// maxAdvance when that is positive.
func (c *splitCursor[T]) observe(ts, maxAdvance int64) {
	p := c.pos.MaxEventTime
	if p == MinWatermark || maxAdvance <= 0 {
		c.pos.MaxEventTime = max(p, ts)
		return
	}
	c.pos.MaxEventTime = max(p, min(ts, addSat(p, maxAdvance)))
}

// watermark is what this split allows: everything up to its progress minus
// the out-of-orderness bound has been read. A finished split holds nothing
// back.
func (c *splitCursor[T]) watermark(bound int64) int64 {
	if c.ended {
		return MaxWatermark
	}
	if c.pos.MaxEventTime == MinWatermark {
		return MinWatermark
	}
	return addSat(c.pos.MaxEventTime, -bound-1)
}

// nothing records that the split had no record at now: it is tried again
// after a backoff that doubles up to maxBackoff, and becomes idle after
// timeout (if positive).
func (c *splitCursor[T]) nothing(now time.Time, timeout time.Duration) (becameIdle bool) {
	if c.since.IsZero() {
		c.since, c.backoff = now, minBackoff
	} else {
		c.backoff = min(2*c.backoff, maxBackoff)
	}
	c.retry = now.Add(c.backoff)
	if timeout > 0 && !c.idle && now.Sub(c.since) >= timeout {
		c.idle = true
		return true
	}
	return false
}

// Backoff of a split that has no record available.
const (
	minBackoff = time.Millisecond
	maxBackoff = 64 * time.Millisecond
)

// addSat adds d to t, saturating at the smallest and largest times.
func addSat(t, d int64) int64 {
	switch {
	case d > 0 && t > math.MaxInt64-d:
		return math.MaxInt64
	case d < 0 && t < math.MinInt64-d:
		return math.MinInt64
	}
	return t + d
}

// stopOffset is how many records of split s a job stopping after n records
// of a source with the given number of splits reads: n dealt round-robin.
func stopOffset(n int64, s, splits int) int64 {
	per := n / int64(splits)
	if int64(s) < n%int64(splits) {
		per++
	}
	return per
}
