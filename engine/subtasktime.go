package engine

import (
	"fmt"

	"github.com/stateproc/stateproc/savepoint"
)

// Every keyed operator keeps, as operator state, each subtask's clock at
// the barrier: its combined watermark and its processing time. A restored
// subtask goes on from there, so that its processing time never goes back
// and, under DeterministicTime, the records and timers after the
// checkpoint see the times they would have seen without the restart. The
// state is a union: a subtask of any parallelism takes the lowest
// watermark and the highest processing time of the old subtasks.
const subtaskClockStateName = "subtask-clock"

const subtaskClockSchema = `{"type":"record","name":"SubtaskClock","namespace":"stateproc.engine","fields":[
 {"name":"subtask","type":"int"},
 {"name":"watermark","type":"long"},
 {"name":"processing_time","type":"long"}]}`

type subtaskClockState struct {
	Subtask        int32 `avro:"subtask"`
	Watermark      int64 `avro:"watermark"`
	ProcessingTime int64 `avro:"processing_time"`
}

var subtaskClockSerializer = mustAvro[subtaskClockState](subtaskClockSchema)

func subtaskClockSpec() operatorStateSpec {
	return operatorStateSpec{name: subtaskClockStateName, distribution: savepoint.Union, element: subtaskClockSerializer}
}

// restoredTime is where a restored operator's subtasks start.
type restoredTime struct {
	watermark, processingTime int64
}

// restoredTimes reads the subtask clocks of every keyed operator the
// savepoint holds. A savepoint written before the engine kept them gives
// its operators the savepoint's creation time and no watermark.
func (r *restoreSource) restoredTimes(nodes []*node) (map[*node]restoredTime, error) {
	times := map[*node]restoredTime{}
	for _, n := range nodes {
		if n.kind != keyedNode || r.savedOperator(n) == nil {
			continue
		}
		rt := restoredTime{watermark: MinWatermark, processingTime: r.src.Metadata().CreatedAt}
		saved := r.operatorStateOf(n, subtaskClockStateName)
		for i, e := range saved {
			c, err := subtaskClockSerializer.Decode(e)
			if err != nil {
				return nil, permanent(fmt.Errorf("operator %s: %s element %d: %w", n.label(), subtaskClockStateName, i, err))
			}
			if i == 0 {
				rt = restoredTime{watermark: c.Watermark, processingTime: c.ProcessingTime}
				continue
			}
			rt.watermark = min(rt.watermark, c.Watermark)
			rt.processingTime = max(rt.processingTime, c.ProcessingTime)
		}
		if rt.watermark == MaxWatermark {
			// Taken after every input ended (a drain, or a bounded job's
			// end): every timer has fired, and the job restored from it
			// reads new input. Its event time starts again, as in Flink,
			// which keeps no watermark; kept at the end, no timer would
			// ever fire again.
			rt.watermark = MinWatermark
		}
		times[n] = rt
	}
	return times, nil
}

// restoredWatermark is the watermark the subtasks of n were restored with:
// the watermark their outputs start at. Sources send theirs before any
// record, so their outputs start at MinWatermark.
func (a *attempt) restoredWatermark(n *node) int64 {
	if rt, ok := a.times[n]; ok {
		return rt.watermark
	}
	return MinWatermark
}

// startTime is where the processing time of a subtask of n starts: the
// restored subtasks' time, or the savepoint's; the earliest time on a
// fresh start (a wall clock then reads the time at once).
func (a *attempt) startTime(n *node) int64 {
	if rt, ok := a.times[n]; ok {
		return rt.processingTime
	}
	if a.restore != nil {
		return a.restore.src.Metadata().CreatedAt
	}
	return 0
}

// snapshotKeyedOperatorState is the operator state of a keyed subtask at a
// barrier: the job's operator list states and the subtask's clock.
func (t *task) snapshotKeyedOperatorState(cp *checkpoint) (map[string][][]byte, error) {
	lists, err := t.snapshotOperatorLists(cp)
	if err != nil {
		return nil, err
	}
	b, err := subtaskClockSerializer.Append(nil, subtaskClockState{Subtask: int32(t.subtask), Watermark: t.watermark, ProcessingTime: t.clock.Now()})
	if err != nil {
		return nil, err
	}
	lists[subtaskClockStateName] = [][]byte{b}
	return lists, nil
}
