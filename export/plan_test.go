package export

import (
	"testing"

	"github.com/stateproc/stateproc/savepoint"
)

// TestRunsAreCutFromTheIndexNotTheCounts: the files of a dataset are as
// many as its index claims rows, but what is planned up front is a run
// per index entry at most, so a count of 2^40 in an index costs nothing
// until that many rows are read.
func TestRunsAreCutFromTheIndexNotTheCounts(t *testing.T) {
	ds := &dataset{index: []savepoint.Segment{
		{Stats: savepoint.Stats{KeyGroup: 0, Entries: 3}},
		{Stats: savepoint.Stats{KeyGroup: 1, Entries: 1 << 40}},
		{Stats: savepoint.Stats{KeyGroup: 2, Entries: 5}},
	}}
	for _, s := range ds.index {
		ds.rows += int64(s.Entries)
	}
	runs := ds.runs(1)
	if len(runs) != 3 || ds.files != ds.rows {
		t.Fatalf("%d runs of %d files for %d rows in 3 index entries", len(runs), ds.files, ds.rows)
	}
	var parts, rows int64
	for i, r := range runs {
		if r.first != i || r.skip != 0 {
			t.Errorf("run %d starts at index entry %d, entry %d", i, r.first, r.skip)
		}
		parts += r.parts
		rows += r.allRows
	}
	if parts != ds.files || rows != ds.rows {
		t.Errorf("the runs hold %d files and %d rows, want %d and %d", parts, rows, ds.files, ds.rows)
	}
	// Files of 4 rows: the second entry starts inside a file, so the
	// first run goes on into it; the third starts at a file's start
	// only if 3 + 2^40 is a multiple of 4, which it is not.
	runs = ds.runs(4)
	if len(runs) != 1 || runs[0].parts != ds.files || ds.files != (ds.rows+3)/4 {
		t.Errorf("files of 4 rows: %d runs, %d files", len(runs), ds.files)
	}
	if p := runs[0].nth(runs[0].parts - 1); p.rows != ds.rows-4*(ds.files-1) || p.seq != int(ds.files-1) {
		t.Errorf("last part: %+v", p)
	}
}
