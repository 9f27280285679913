package coord

import (
	"testing"

	"github.com/stateproc/stateproc/engine/internal/flow"
)

type testSubtask struct {
	name string
	role Role
}

func (s *testSubtask) Role() Role               { return s.role }
func (s *testSubtask) Commands() chan<- Command { return nil }

// The epoch goes just above the highest of the keyed operators' lowest
// upstream watermarks, counting only the sources still reading.
func TestEpochAbove(t *testing.T) {
	a, b, c := &testSubtask{"a", SourceRole}, &testSubtask{"b", SourceRole}, &testSubtask{"c", SourceRole}
	co := New(Config[*testSubtask]{
		Sources:  []*testSubtask{a, b, c},
		Upstream: []map[*testSubtask]bool{{a: true, b: true}, {c: true}},
	}, 1)
	prepared := func(s *testSubtask, w int64, atEnd bool) {
		co.prepared[s] = Message[*testSubtask]{Kind: PreparedMsg, Task: s, Watermark: w, AtEnd: atEnd}
	}
	prepared(a, 40, false)
	prepared(b, 10, false)
	prepared(c, 25, false)
	if e := co.epochAbove(); e != 26 {
		t.Fatalf("epoch %d, want 26: above c's 25, the higher of min(40, 10) and 25", e)
	}
	prepared(b, 10, true)
	if e := co.epochAbove(); e != 41 {
		t.Fatalf("epoch %d with b at its end, want 41", e)
	}
	prepared(a, 40, true)
	prepared(c, 25, true)
	if e := co.epochAbove(); e != flow.MaxWatermark {
		t.Fatalf("epoch %d with every source at its end, want MaxWatermark", e)
	}
}

// A checkpoint's time is the latest processing time of its keyed
// subtasks, its watermark the lowest of any subtask but the sinks.
func TestCheckpointTimes(t *testing.T) {
	var ct checkpointTimes
	ct.add(SourceRole, 500, 30)
	ct.add(SinkRole, 900, 5)
	if ct.createdAt() != 500 || ct.oldest != 30 {
		t.Fatalf("without keyed subtasks: created %d, watermark %d, want 500 and 30", ct.createdAt(), ct.oldest)
	}
	ct.add(KeyedRole, 300, 20)
	ct.add(KeyedRole, 400, 25)
	if ct.createdAt() != 400 || ct.oldest != 20 {
		t.Fatalf("created %d, watermark %d, want 400 (the latest keyed) and 20", ct.createdAt(), ct.oldest)
	}
}
