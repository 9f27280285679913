package flinkfmt

import (
	"testing"

	"github.com/stateproc/stateproc/savepoint"
)

func TestModelMapping(t *testing.T) {
	for k, want := range map[Kind]savepoint.Kind{Value: savepoint.Value, List: savepoint.List, Map: savepoint.Map, Reducing: savepoint.Reducing, Aggregating: savepoint.Aggregating} {
		if got, ok := k.SavepointKind(); !ok || got != want {
			t.Errorf("%s: %v, %v", k, got, ok)
		}
	}
	if _, ok := Timers.SavepointKind(); ok {
		t.Error("timers are a timer service, not a state kind")
	}
	if d, ok := Union.SavepointDistribution(); !ok || d != savepoint.Union {
		t.Errorf("union: %v", d)
	}
	if _, ok := Broadcast.SavepointDistribution(); ok {
		t.Error("broadcast state is not list state")
	}
}
