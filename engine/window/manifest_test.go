package window

import (
	"slices"
	"testing"
	"time"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/serializers"
)

// A built window job lists its window state without running: the
// contents, the count trigger's count and the merging window set, each
// with its namespace, and timer services namespaced by the window.
func TestManifestListsWindowState(t *testing.T) {
	j := windowJob(source{splits: 1, n: 1, keys: 1}, 2, EventTimeSession(time.Second), aggregateFn, engine.NewCollectSink[result](),
		func(ws Stream[string, event]) Stream[string, event] { return ws.Trigger(Purging(CountTrigger(5))) })
	m, err := j.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range m.Operators {
		if op.UID != "windows" {
			continue
		}
		var got []string
		for _, s := range op.States {
			got = append(got, s.Name+" "+s.Kind+" "+string(s.Namespace.Kind))
		}
		want := []string{"window-contents aggregating window", "count reducing window", "merging-window-set map void"}
		if !slices.Equal(got, want) {
			t.Errorf("states %v, want %v", got, want)
		}
		for _, ts := range op.Timers {
			if ts.Namespace.Kind != serializers.KindWindow {
				t.Errorf("timer service %s: namespace %s, want window", ts.Name, ts.Namespace)
			}
		}
		if len(op.Timers) != 2 {
			t.Errorf("%d timer services, want event-time and processing-time", len(op.Timers))
		}
		return
	}
	t.Fatal("no operator windows in the manifest")
}
