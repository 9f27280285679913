package export_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/sptest"
)

const windowedSavepoint = "../testdata/savepoints/v2/gateway-window-p2-heap"

// The windowed GatewayMeter's window contents and timers export with their
// windows as window_start and window_end, which DuckDB reads as
// timestamps: the same windows as the savepoint's namespaces, each one
// minute long, and each timer at its window's last millisecond.
func TestWindowBoundsExport(t *testing.T) {
	out, _ := exportTo(t, windowedSavepoint, export.Options{})
	d := openDuck(t, out)
	r := openReader(t, windowedSavepoint)

	want := map[string]int{}
	for _, e := range sptest.Entries(t, r, "tenant-cost", "window-contents") {
		want[fmt.Sprintf("%d,%d", binary.BigEndian.Uint64(e.Namespace), binary.BigEndian.Uint64(e.Namespace[8:]))]++
	}
	if len(want) == 0 {
		t.Fatal("the savepoint has no window open")
	}
	got := map[string]int{}
	for _, row := range d.rows("SELECT epoch_ms(window_start), epoch_ms(window_end), count(*) FROM {tenant-cost/window-contents} GROUP BY ALL") {
		got[row[0]+","+row[1]] = int(atoi(t, row[2]))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("windows in the export %v, in the savepoint %v", got, want)
	}
	if n := d.one("SELECT count(*) FROM {tenant-cost/window-contents} WHERE window_end - window_start <> INTERVAL 1 MINUTE"); n != "0" {
		t.Errorf("%s windows are not one minute long", n)
	}
	cols := d.describe("tenant-cost/event-time")
	for _, c := range []string{"window_start TIMESTAMP WITH TIME ZONE", "window_end TIMESTAMP WITH TIME ZONE"} {
		if !slices.Contains(cols, c) {
			t.Errorf("timers lack %q: %v", c, cols)
		}
	}
	if n := d.one("SELECT count(*) FROM {tenant-cost/event-time}"); n == "0" {
		t.Error("no window timer exported")
	}
	if n := d.one("SELECT count(*) FROM {tenant-cost/event-time} WHERE epoch_ms(timestamp) <> epoch_ms(window_end) - 1"); n != "0" {
		t.Errorf("%s timers are not at their window's last millisecond", n)
	}
}
