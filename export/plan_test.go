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
	// Files of 4 rows: the second and third entries each hold a file's
	// start, one row in, so each starts a run that skips the row the run
	// before it holds; the second entry's later files stay in its run,
	// which reads the entry once.
	runs = ds.runs(4)
	if len(runs) != 3 || ds.files != (ds.rows+3)/4 {
		t.Fatalf("files of 4 rows: %d runs, %d files", len(runs), ds.files)
	}
	want := []struct {
		seq, first int
		skip       uint64
		parts      int64
	}{{0, 0, 0, 1}, {1, 1, 1, 1 << 38}, {1<<38 + 1, 2, 1, 1}}
	parts, rows = 0, 0
	for i, r := range runs {
		if w := want[i]; r.seq != w.seq || r.first != w.first || r.skip != w.skip || r.parts != w.parts {
			t.Errorf("run %d: part %d from index entry %d, entry %d, %d parts; want %+v", i, r.seq, r.first, r.skip, r.parts, w)
		}
		parts += r.parts
		rows += r.allRows
	}
	if parts != ds.files || rows != ds.rows {
		t.Errorf("the runs hold %d files and %d rows, want %d and %d", parts, rows, ds.files, ds.rows)
	}
	last := runs[len(runs)-1]
	if p := last.nth(last.parts - 1); p.rows != ds.rows-4*(ds.files-1) || p.seq != int(ds.files-1) {
		t.Errorf("last part: %+v", p)
	}
}
