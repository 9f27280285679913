package export_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/ttl"
)

// checkedIn lists the savepoints the example jobs wrote into testdata.
func checkedIn(t *testing.T) []string {
	dirs, _ := filepath.Glob("../testdata/savepoints/v2/*/" + snapshotfmt.MetadataName)
	if len(dirs) == 0 {
		t.Skip("no savepoints in testdata/savepoints/v2")
	}
	for i := range dirs {
		dirs[i] = filepath.Dir(dirs[i])
	}
	return dirs
}

func openReader(t *testing.T, sp string) *snapshotfmt.Reader {
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(sp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestCheckedInCounts exports every checked-in savepoint and compares the
// rows of every dataset, per key group, with the savepoint's index, and the
// rows of operator and broadcast state with the metadata.
func TestCheckedInCounts(t *testing.T) {
	for _, sp := range checkedIn(t) {
		t.Run(filepath.Base(sp), func(t *testing.T) {
			out, s := exportTo(t, sp, export.Options{})
			d := openDuck(t, out)
			r := openReader(t, sp)
			m := r.Metadata()
			datasets := 0
			for opIdx := range m.Operators {
				op := &m.Operators[opIdx]
				for _, ref := range m.Refs(opIdx) {
					name := m.RefName(ref)
					want := map[string]string{}
					for _, seg := range sptest.Segments(t, r, ref) {
						want[itoa(seg.KeyGroup)] = fmt.Sprint(seg.Entries)
					}
					got := map[string]string{}
					for _, row := range d.rows("SELECT key_group, count(*) FROM {" + op.UID + "/" + name + "} GROUP BY key_group") {
						got[row[0]] = row[1]
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("%s/%s: rows per key group %v, index says %v", op.UID, name, got, want)
					}
					datasets++
				}
				for _, os := range op.OperatorStates {
					want := 0
					for _, sub := range os.Subtasks {
						want += len(sub)
					}
					if got := d.one("SELECT count(*) FROM {" + op.UID + "/" + os.Name + "}"); got != itoa(want) {
						t.Errorf("%s/%s: %s rows, want %d", op.UID, os.Name, got, want)
					}
					datasets++
				}
				for _, bs := range op.BroadcastStates {
					if got := d.one("SELECT count(*) FROM {" + op.UID + "/" + bs.Name + "}"); got != itoa(len(bs.Entries)) {
						t.Errorf("%s/%s: %s rows, want %d", op.UID, bs.Name, got, len(bs.Entries))
					}
					datasets++
				}
			}
			if len(s.Datasets) != datasets {
				t.Errorf("%d datasets, want %d", len(s.Datasets), datasets)
			}
		})
	}
}

// decodeAll decodes every entry of a keyed state with the savepoint's own
// serializers, the way dump does, for comparison with what DuckDB reads.
func decodeAll(t *testing.T, r *snapshotfmt.Reader, uid, state string) (*savepoint.KeyedState, []savepoint.Decoded) {
	m := r.Metadata()
	op, ok := m.Operator(uid)
	if !ok {
		return nil, nil
	}
	st, ok := op.State(state)
	if !ok {
		return nil, nil
	}
	opIdx := slices.IndexFunc(m.Operators, func(o savepoint.Operator) bool { return o.UID == uid })
	ref, _ := m.Find(opIdx, state)
	dec, err := savepoint.NewDecoder(op, st)
	if err != nil {
		t.Fatal(err)
	}
	var out []savepoint.Decoded
	for _, e := range sptest.EntriesOf(t, r, ref) {
		dd, err := dec.Decode(&e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dd)
	}
	return st, out
}

// TestCheckedInAggregates compares what DuckDB computes from the export
// with the same figures decoded from the savepoint: each tenant's
// usd_total, the open requests, each user's category counts and how many
// of them are expired a day after the savepoint.
func TestCheckedInAggregates(t *testing.T) {
	checked := 0
	for _, sp := range checkedIn(t) {
		t.Run(filepath.Base(sp), func(t *testing.T) {
			r := openReader(t, sp)
			now := r.Metadata().CreatedAt + int64(day)
			out, _ := exportTo(t, sp, export.Options{Now: &now})
			d := openDuck(t, out)

			if _, entries := decodeAll(t, r, "tenant-cost", "usd_total"); entries != nil {
				want := map[string]string{}
				for _, e := range entries {
					want[e.Key.(string)] = fmt.Sprint(e.Value)
				}
				got := map[string]string{}
				for _, row := range d.rows("SELECT key, sum(value) FROM {tenant-cost/usd_total} GROUP BY key") {
					got[row[0]] = row[1]
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("usd_total per tenant: export %v, savepoint %v", got, want)
				}
				checked++
			}
			if _, entries := decodeAll(t, r, "assemble", "open"); entries != nil {
				if got := d.one("SELECT count(*) FROM {assemble/open} WHERE value.request_id = key"); got != itoa(len(entries)) {
					t.Errorf("open requests: export %s, savepoint %d", got, len(entries))
				}
				checked++
			}
			if st, entries := decodeAll(t, r, "session-features", "category-counts"); entries != nil {
				type agg struct{ n, sum, expired int64 }
				want := map[string]agg{}
				for _, e := range entries {
					a := want[e.Key.(string)]
					a.n++
					a.sum += e.Value.(int64)
					if ttl.Expired(e.LastModified, st.TTL.Millis(), now) {
						a.expired++
					}
					want[e.Key.(string)] = a
				}
				got := map[string]agg{}
				for _, row := range d.rows("SELECT key, count(*), sum(value), count(*) FILTER (WHERE expired) FROM {session-features/category-counts} GROUP BY key") {
					got[row[0]] = agg{atoi(t, row[1]), atoi(t, row[2]), atoi(t, row[3])}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("category counts per user differ: export has %d users, savepoint %d", len(got), len(want))
				}
				checked++
			}
		})
	}
	if checked == 0 {
		t.Log("no checked-in savepoint has the example states")
	}
}

// TestDeterministic: the same export twice, on one worker or several,
// gives the same bytes.
func TestDeterministic(t *testing.T) {
	sp := typesSavepoint(t)
	a, _ := exportTo(t, sp, export.Options{Workers: 1, MaxRowsPerFile: 2})
	b, _ := exportTo(t, sp, export.Options{Workers: 4, MaxRowsPerFile: 2})
	names := fileNames(t, a)
	if got := fileNames(t, b); fmt.Sprint(got) != fmt.Sprint(names) {
		t.Fatalf("files differ: %v and %v", names, got)
	}
	for _, n := range names {
		x, err := os.ReadFile(filepath.Join(a, n))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, n))
		if err != nil {
			t.Fatal(err)
		}
		if string(x) != string(y) {
			t.Errorf("%s differs between runs", n)
		}
	}
}
