package engine

import (
	"fmt"

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
	// Open returns a reader of split positioned after offset records.
	Open(split int, offset int64) (SplitReader[T], error)
}

// SplitReader reads one split in order.
type SplitReader[T any] interface {
	// Next returns the next record and its event time (epoch ms), or
	// ok=false at the end of the split.
	Next() (v T, eventTime int64, ok bool, err error)
}

// Watermarks configures how a source derives watermarks from event times.
// A split's watermark is the largest event time read from it minus
// OutOfOrderness, minus one, so an event that lags by no more than
// OutOfOrderness is never behind it. No record is dropped for being late:
// one that lags further reaches ProcessElement with a Timestamp at or behind
// CurrentWatermark, and an event-time timer it registers there fires when
// the watermark next advances.
type Watermarks struct {
	// OutOfOrderness is how far, in milliseconds, an event may lag behind
	// the largest event time already read from its split.
	OutOfOrderness int64
	// Every is how many records a source subtask reads between two
	// watermarks; 0 means 256.
	Every int
}

// splitPositionSchema is the Avro schema of the source's operator state:
// one element per split, so that the toolkit can show where a source
// stood without the job's code.
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

func mustAvro[T any](schema string) serializers.Of[T] {
	s, err := serializers.Avro[T](schema)
	if err != nil {
		panic(fmt.Sprintf("engine: built-in schema: %v", err))
	}
	return s
}

// FromSource adds a source to the job. Its operator state (the position in
// every split) is redistributed evenly on restore.
func FromSource[T any](j *Job, src Source[T], wm Watermarks, opts ...OperatorOption) Stream[T] {
	n := j.addNode(sourceNode, "source", opts)
	n.stateful = true
	n.opState = append(n.opState, operatorStateSpec{
		name:         sourceStateName,
		distribution: savepoint.EvenSplit,
		element:      splitPositionSerializer,
	})
	if wm.Every <= 0 {
		wm.Every = 256
	}
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
}

func (c *splitCursor[T]) paused() bool { return c.limit >= 0 && c.pos.Offset >= c.limit }

// watermark is what this split allows: everything up to its largest event
// time minus the out-of-orderness bound has been read. A finished split
// holds nothing back.
func (c *splitCursor[T]) watermark(bound int64) int64 {
	if c.ended {
		return MaxWatermark
	}
	if c.pos.MaxEventTime == MinWatermark {
		return MinWatermark
	}
	return c.pos.MaxEventTime - bound - 1
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
