package cli_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/internal/sptest"
)

var shardCounts = []int{1, 3, 7}

// must runs the command in process and fails the test unless it exits 0.
func must(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := inProcess(args...)
	if code != cli.ExitOK {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// dirBytes reads every file of a directory, by name.
func dirBytes(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	var names []string
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if g, ok := got[n]; !ok {
			t.Errorf("%s: no file %s", what, n)
		} else if !bytes.Equal(g, want[n]) {
			t.Errorf("%s: %s differs (%d bytes, want %d)", what, n, len(g), len(want[n]))
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: extra file %s", what, n)
		}
	}
}

// prune-ttl run as N shards and committed writes the savepoint a single
// run writes, byte for byte, names and all; the parts are gone after.
func TestPruneTTLShardsCommitted(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		// Some segments of category-counts partly expired, some whole.
		{"sessions-p2-heap", []string{"--ttl", "session-features/category-counts=2d"}},
		{"gateway-p3-heap-zstd", []string{"--ttl", "assemble/open=10m"}},
	} {
		in, _ := filepath.Abs("../testdata/savepoints/v2/" + c.name)
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			single := filepath.Join(dir, "single")
			must(t, append([]string{"prune-ttl", in, "--out", single}, c.args...)...)
			want := dirBytes(t, single)
			if len(want) < 3 {
				t.Fatalf("the single run wrote %d files", len(want))
			}
			for _, n := range shardCounts {
				out := filepath.Join(dir, fmt.Sprintf("sharded-%d", n))
				for i := range n {
					must(t, append([]string{"prune-ttl", in, "--out", out, "--shard", fmt.Sprintf("%d/%d", i, n)}, c.args...)...)
				}
				must(t, "commit", "--out", out, "--shards", fmt.Sprint(n))
				sameFiles(t, fmt.Sprintf("%d shards", n), dirBytes(t, out), want)
				if parts, _ := filepath.Glob(out + ".shard-*"); len(parts) != 0 {
					t.Errorf("%d shards: parts left after commit: %v", n, parts)
				}
			}
		})
	}
}

// A commit with a shard missing is refused and writes nothing.
func TestCommitRefusesAMissingShard(t *testing.T) {
	in, _ := filepath.Abs("../testdata/savepoints/v2/sessions-p2-heap")
	out := filepath.Join(t.TempDir(), "out")
	must(t, "prune-ttl", in, "--out", out, "--shard", "0/3")
	must(t, "prune-ttl", in, "--out", out, "--shard", "2/3")
	code, _, stderr := inProcess("commit", "--out", out, "--shards", "3")
	if code != cli.ExitUsage || !strings.Contains(stderr, "shard 1 of 3 has no part") {
		t.Fatalf("exit %d, %s; want exit %d naming shard 1", code, stderr, cli.ExitUsage)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused commit left %s: %v", out, err)
	}
	if code, _, _ := inProcess("prune-ttl", in, "--out", out, "--shard", "3/3"); code != cli.ExitUsage {
		t.Errorf("--shard 3/3: exit %d, want %d", code, cli.ExitUsage)
	}
}

// export run as N shards and committed holds the rows of a single run
// (EXCEPT both ways is empty, and the counts match) with the same columns.
func TestExportShardsCommitted(t *testing.T) {
	in, _ := filepath.Abs("../testdata/savepoints/v2/sessions-p2-heap")
	dir := t.TempDir()
	single := filepath.Join(dir, "single")
	must(t, "export", in, "--out", single, "--now", "2026-01-06T00:00:00Z")
	datasets, _ := filepath.Glob(filepath.Join(single, "*", "*"))
	if len(datasets) < 4 {
		t.Fatalf("the single export wrote %d datasets: %v", len(datasets), datasets)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, n := range shardCounts {
		out := filepath.Join(dir, fmt.Sprintf("sharded-%d", n))
		for i := range n {
			must(t, "export", in, "--out", out, "--now", "2026-01-06T00:00:00Z", "--shard", fmt.Sprintf("%d/%d", i, n))
		}
		must(t, "commit", "--export", "--out", out, "--shards", fmt.Sprint(n))
		for _, ds := range datasets {
			rel, _ := filepath.Rel(single, ds)
			a := fmt.Sprintf("read_parquet('%s')", filepath.Join(ds, "*.parquet"))
			b := fmt.Sprintf("read_parquet('%s')", filepath.Join(out, rel, "*.parquet"))
			if ta, tb := columnTypes(t, db, a), columnTypes(t, db, b); ta != tb {
				t.Errorf("%d shards, %s: columns %s, want %s", n, rel, tb, ta)
			}
			var rowsA, rowsB, onlyA, onlyB int64
			q := fmt.Sprintf("SELECT (SELECT count(*) FROM %[1]s), (SELECT count(*) FROM %[2]s), (SELECT count(*) FROM (SELECT * FROM %[1]s EXCEPT ALL SELECT * FROM %[2]s)), (SELECT count(*) FROM (SELECT * FROM %[2]s EXCEPT ALL SELECT * FROM %[1]s))", a, b)
			if err := db.QueryRow(q).Scan(&rowsA, &rowsB, &onlyA, &onlyB); err != nil {
				t.Fatal(err)
			}
			if rowsA != rowsB || onlyA != 0 || onlyB != 0 {
				t.Errorf("%d shards, %s: %d rows, want %d; %d only in the single run, %d only in the shards", n, rel, rowsB, rowsA, onlyA, onlyB)
			}
			if rel == filepath.Join("session-features", "category-counts") && rowsA < 10000 {
				t.Errorf("%s: %d rows, want the savepoint's 15773", rel, rowsA)
			}
		}
	}
}

type verifyFigures struct {
	Segments int    `json:"segments"`
	Entries  uint64 `json:"entries"`
	Bytes    int64  `json:"bytes"`
}

// verify run as N shards reads every segment once: the shards' figures add
// up to the single run's; and of a savepoint with one byte flipped, exactly
// one shard fails, with the single run's error (file, key group, offset).
func TestVerifyShards(t *testing.T) {
	in, _ := filepath.Abs("../testdata/savepoints/v2/sessions-p2-heap")
	var whole verifyFigures
	if err := json.Unmarshal([]byte(must(t, "verify", "-o", "json", in)), &whole); err != nil {
		t.Fatal(err)
	}
	// 15773 category-counts entries, 18 sessions, 18 event-time timers.
	if whole.Entries != 15773+18+18 {
		t.Fatalf("the single run read %d entries, want 15809", whole.Entries)
	}
	bad, _ := sptest.Flipped(t, in)
	code, _, wantErr := inProcess("verify", bad)
	if code != cli.ExitBadInput {
		t.Fatalf("verify of the flipped savepoint: exit %d, want %d: %s", code, cli.ExitBadInput, wantErr)
	}
	for _, n := range shardCounts {
		var sum verifyFigures
		for i := range n {
			var f verifyFigures
			if err := json.Unmarshal([]byte(must(t, "verify", "-o", "json", "--shard", fmt.Sprintf("%d/%d", i, n), in)), &f); err != nil {
				t.Fatal(err)
			}
			sum.Segments += f.Segments
			sum.Entries += f.Entries
			sum.Bytes += f.Bytes
		}
		if sum != whole {
			t.Errorf("%d shards: %+v, want %+v", n, sum, whole)
		}
		failed := 0
		for i := range n {
			code, _, stderr := inProcess("verify", "--shard", fmt.Sprintf("%d/%d", i, n), bad)
			if code == cli.ExitOK {
				continue
			}
			failed++
			if code != cli.ExitBadInput || stderr != wantErr {
				t.Errorf("%d shards, shard %d: exit %d, %q; want exit %d, %q", n, i, code, stderr, cli.ExitBadInput, wantErr)
			}
		}
		if failed != 1 {
			t.Errorf("%d shards: %d failed, want 1", n, failed)
		}
	}
}

// Export parts of different savepoints, formats or flags are never put
// together: each part records what it is a part of, and commit compares
// them, as it compares the lineage of a rewrite's parts.
func TestCommitRefusesMixedExportParts(t *testing.T) {
	sp := func(name string) string {
		p, _ := filepath.Abs("../testdata/savepoints/v2/" + name)
		return p
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		second []string
		want   string
	}{
		{"another job", []string{sp("gateway-p2-pebble")}, "its input savepoint differs"},
		{"another format", []string{sp("sessions-p2-heap"), "--format", "jsonl"}, "its options differ"},
		{"another now", []string{sp("sessions-p2-heap"), "--now", "2030-01-01T00:00:00Z"}, "its options differ"},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
		must(t, "export", sp("sessions-p2-heap"), "--out", out, "--shard", "0/2")
		must(t, append(append([]string{"export"}, c.second...), "--out", out, "--shard", "1/2")...)
		code, _, stderr := inProcess("commit", "--export", "--out", out, "--shards", "2")
		if code != cli.ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %s; want exit %d: %q", c.name, code, stderr, cli.ExitUsage, c.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: the refused commit left %s: %v", c.name, out, err)
		}
	}
	// A part of a run into 3 shards is not shard 1 of 2.
	out := filepath.Join(dir, "another-count")
	must(t, "export", sp("sessions-p2-heap"), "--out", out, "--shard", "0/2")
	must(t, "export", sp("sessions-p2-heap"), "--out", out, "--shard", "1/3")
	if err := os.Rename(out+".shard-00001-of-00003", out+".shard-00001-of-00002"); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := inProcess("commit", "--export", "--out", out, "--shards", "2"); code != cli.ExitUsage || !strings.Contains(stderr, "is shard 1 of 3, not 1 of 2") {
		t.Errorf("another count: exit %d, %s", code, stderr)
	}
}
