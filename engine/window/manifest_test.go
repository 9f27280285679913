package window

import (
	"errors"
	"slices"
	"strings"
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

// Bad window settings are refused when the job is validated, before any
// subtask starts, with the operator named.
func TestBadSettingsRefusedAtBuild(t *testing.T) {
	for name, c := range map[string]struct {
		a    Assigner
		with func(Stream[string, event]) Stream[string, event]
		want string
	}{
		"empty tumbling window": {TumblingEventTime(0), nil, "size"},
		"negative lateness": {TumblingEventTime(time.Second), func(ws Stream[string, event]) Stream[string, event] {
			return ws.AllowedLateness(-time.Millisecond)
		}, "allowed lateness"},
		"session without gap": {EventTimeSession(0), nil, "gap"},
	} {
		t.Run(name, func(t *testing.T) {
			j := windowJob(source{splits: 1, n: 1, keys: 1}, 2, c.a, aggregateFn, engine.NewCollectSink[result](), c.with)
			err := j.Validate()
			if !errors.Is(err, engine.ErrBuild) || !strings.Contains(err.Error(), `"windows"`) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate: %v, want ErrBuild naming operator \"windows\" and %q", err, c.want)
			}
			if _, err := j.Manifest(); !errors.Is(err, engine.ErrBuild) {
				t.Errorf("Manifest: %v, want ErrBuild", err)
			}
		})
	}
}
