package statetest

import (
	"testing"

	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/keygroup"
)

// Factory returns an empty backend owning kgs. It registers the backend's
// cleanup with t.
type Factory func(t testing.TB, kgs keygroup.Range, maxParallelism int) state.Backend

type test struct {
	name string
	run  func(t *testing.T, newBackend Factory)
}

// Run checks everything a single backend must do.
func Run(t *testing.T, newBackend Factory) {
	tests := []test{
		{"Value", testValue},
		{"List", testList},
		{"Map", testMap},
		{"MapByteOrder", testMapByteOrder},
		{"Reducing", testReducing},
		{"Aggregating", testAggregating},
		{"Isolation", testIsolation},
		{"CurrentKey", testCurrentKey},
		{"KeyOutsideRange", testKeyOutsideRange},
		{"RegisterTwice", testRegisterTwice},
		{"TTL", testTTL},
		{"TTLWriteRefreshes", testTTLWriteRefreshes},
		{"TTLCleanupOnRead", testTTLCleanupOnRead},
		{"TTLFullSnapshotCleanup", testTTLFullSnapshotCleanup},
		{"TTLIncrementalCleanupRaw", testIncrementalCleanupRaw},
		{"TTLIncrementalCleanup", testIncrementalCleanup},
		{"TTLSweeper", testSweeper},
		{"TTLCleanupKeepsWhatReadsSee", testCleanupKeepsWhatReadsSee},
		{"Timers", testTimers},
		{"TimerOrder", testTimerOrder},
		{"SnapshotLayout", testSnapshotLayout},
		{"SnapshotDeterministic", testSnapshotDeterministic},
		{"Rescale", testRescale},
		{"RestoreNonRestoredState", testNonRestoredState},
		{"RestoreIncompatible", testRestoreIncompatible},
		{"RestoreMaxParallelism", testRestoreMaxParallelism},
		{"RestoreTTLEnabled", testRestoreTTLEnabled},
		{"RestoreTTLDisabled", testRestoreTTLDisabled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newBackend) })
	}
}

// RunCross checks that backends a and b are interchangeable: the same
// operations give byte-identical savepoints, and a savepoint of either
// restores into the other with identical entries.
func RunCross(t *testing.T, a, b Factory) {
	t.Run("SameBytes", func(t *testing.T) { testSameBytes(t, a, b) })
	t.Run("RestoreAcross", func(t *testing.T) { testRestoreAcross(t, a, b) })
}
