package inspect_test

import (
	"context"
	"testing"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/sptest"
)

// The windowed GatewayMeter's window state says it is window state: its
// namespace type, and that of its timer services, is "time window", and
// the figures count the open windows and their timers.
func TestInspectNamesWindowState(t *testing.T) {
	r := sptest.Open(t, "../testdata/savepoints/v2/gateway-window-p2-heap")
	rep, err := inspect.Inspect(context.Background(), r, inspect.Options{Scan: true})
	if err != nil {
		t.Fatal(err)
	}
	var contents *inspect.StateInfo
	for i, s := range rep.States {
		switch {
		case s.Operator == "tenant-cost" && s.Name == "window-contents":
			contents = &rep.States[i]
		case s.NamespaceType == "time window":
			t.Errorf("%s/%s is not window state, yet its namespace type is %q", s.Operator, s.Name, s.NamespaceType)
		}
	}
	if contents == nil {
		t.Fatal("no window-contents state in the report")
	}
	if contents.NamespaceType != "time window" || contents.Kind != "aggregating" {
		t.Errorf("window-contents: namespace type %q, kind %q; want time window, aggregating", contents.NamespaceType, contents.Kind)
	}
	if want := uint64(len(sptest.Entries(t, r, "tenant-cost", "window-contents"))); contents.Entries != want || want == 0 {
		t.Errorf("window-contents: %d entries, the data holds %d", contents.Entries, want)
	}
	timers := 0
	for _, ti := range rep.Timers {
		if ti.Operator != "tenant-cost" {
			continue
		}
		if ti.NamespaceType != "time window" {
			t.Errorf("timer service %s: namespace type %q, want time window", ti.Name, ti.NamespaceType)
		}
		timers += int(ti.Timers)
	}
	if want := len(sptest.Timers(t, r, "tenant-cost", "event-time")); timers != want || want == 0 {
		t.Errorf("%d window timers reported, the data holds %d", timers, want)
	}
}
