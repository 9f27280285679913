package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/internal/flinkgen"
)

// sortedDump is every entry of one state, as dump prints them, sorted:
// the state as a multiset, whatever its key groups.
func sortedDump(t *testing.T, dir, op, state string) []string {
	t.Helper()
	code, stdout, stderr := inProcess("dump", dir, "--operator", op, "--state", state)
	if code != cli.ExitOK {
		t.Fatalf("dump %s: exit %d: %s", dir, code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	slices.Sort(lines)
	return lines
}

// keyedMaxParallelism reads the max parallelism of the operators with
// keyed state from inspect.
func keyedMaxParallelism(t *testing.T, dir string) map[string]int {
	t.Helper()
	code, stdout, stderr := inProcess("inspect", dir, "-o", "json")
	if code != cli.ExitOK {
		t.Fatalf("inspect %s: exit %d: %s", dir, code, stderr)
	}
	var rep struct {
		Operators []struct {
			ID             string
			KeyType        string `json:"key_type"`
			MaxParallelism int    `json:"max_parallelism"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, op := range rep.Operators {
		if op.KeyType != "" && op.KeyType != "-" {
			out[op.ID] = op.MaxParallelism
		}
	}
	return out
}

// rescale of a Flink savepoint (the migration job's, Flink 1.19, RocksDB's
// canonical layout with snappy): at max parallelism 32 verify --deep
// passes (which checks every key against Flink's hash of it), every
// state-name holds the job's entries, and back at 4 the savepoint holds
// them again; --dry-run writes nothing.
func TestFlinkRescale(t *testing.T) {
	src := filepath.Join(flinkRoot(t), statefulSnappy)
	tmp := t.TempDir()
	ops := statefulOperators(t, src)
	want := map[string][]string{}
	for op := range ops {
		want[op] = sortedDump(t, src, op, statefulValueState)
	}
	if code, stdout, stderr := inProcess("rescale", src, "--max-parallelism", "32", "--dry-run", "--out", filepath.Join(tmp, "dry")); code != cli.ExitOK || !strings.Contains(stdout, "4 -> 32") {
		t.Errorf("rescale --dry-run: exit %d: %s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(tmp, "dry")); err == nil {
		t.Errorf("rescale --dry-run wrote its --out")
	}
	at32, back := filepath.Join(tmp, "at32"), filepath.Join(tmp, "back")
	for _, step := range []struct {
		from, to string
		maxP     int
	}{{src, at32, 32}, {at32, back, 4}} {
		code, _, stderr := inProcess("rescale", step.from, "--max-parallelism", strconv.Itoa(step.maxP), "--out", step.to, "-o", "json")
		if code != cli.ExitOK {
			t.Fatalf("rescale %s to %d: exit %d: %s", step.from, step.maxP, code, stderr)
		}
		if code, stdout, stderr := inProcess("verify", "--deep", step.to); code != cli.ExitOK {
			t.Errorf("verify --deep of %s: exit %d: %s%s", step.to, code, stdout, stderr)
		}
		maxP := keyedMaxParallelism(t, step.to)
		if len(maxP) != 4 {
			t.Errorf("%s: keyed operators %v, want 4", step.to, maxP)
		}
		for op, p := range maxP {
			if p != step.maxP {
				t.Errorf("%s: operator %s at max parallelism %d, want %d", step.to, op, p, step.maxP)
			}
		}
		for op := range ops {
			if got := sortedDump(t, step.to, op, statefulValueState); !slices.Equal(got, want[op]) {
				t.Errorf("%s: %s of %s:\n%q\nwant\n%q", step.to, statefulValueState, op, got, want[op])
			}
		}
	}
}

// diff and report read Flink savepoints through the same seam: the
// savepoint rescaled there and back has the same state as the input, a
// savepoint of the same job by another Flink release has not, and the
// report of it is written.
func TestFlinkDiffAndReport(t *testing.T) {
	root := flinkRoot(t)
	src := filepath.Join(root, statefulSnappy)
	tmp := t.TempDir()
	at32, back := filepath.Join(tmp, "at32"), filepath.Join(tmp, "back")
	for _, step := range [][]string{{src, at32, "32"}, {at32, back, "4"}} {
		if code, _, stderr := inProcess("rescale", step[0], "--max-parallelism", step[2], "--out", step[1]); code != cli.ExitOK {
			t.Fatalf("rescale %s: exit %d: %s", step[0], code, stderr)
		}
	}
	if code, stdout, stderr := inProcess("diff", "--exit-code", src, back); code != cli.ExitOK {
		t.Errorf("diff of the savepoint and its copy rescaled there and back: exit %d: %s%s", code, stdout, stderr)
	}
	other := filepath.Join(root, strings.Replace(statefulSnappy, "flink1.19", "flink1.18", 1))
	if code, _, stderr := inProcess("diff", "--exit-code", src, other); code != cli.ExitDiffer {
		t.Errorf("diff of the 1.19 and 1.18 savepoints: exit %d, want %d: %s", code, cli.ExitDiffer, stderr)
	}
	page := filepath.Join(tmp, "report.html")
	if code, _, stderr := inProcess("report", src, "--out", page); code != cli.ExitOK {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), statefulValueState) || !strings.Contains(string(b), "<svg") {
		t.Errorf("the report of a Flink savepoint (%d bytes) names no %s or draws no chart", len(b), statefulValueState)
	}
}

// A savepoint keyed by a class whose hash is not defined by its value is
// refused by name before anything is written: the Scala migration job keys
// by a tuple that Kryo serializes.
func TestFlinkRescaleRefusesKryoKeys(t *testing.T) {
	src := filepath.Join(flinkRoot(t), "flink-tests/src/test/resources/stateful-scala-udf-migration-itcase-flink1.18-rocksdb-savepoint")
	tmp := t.TempDir()
	out := filepath.Join(tmp, "out")
	code, _, stderr := inProcess("rescale", src, "--max-parallelism", "32", "--out", out)
	if code != cli.ExitUsage || !strings.Contains(stderr, "keys of class java.lang.Object (serializer org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot)") {
		t.Errorf("rescale of Kryo keys: exit %d: %s", code, stderr)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("a refused rescale left %v", left)
	}
}

// operator rename and remove of a Flink 1.18 savepoint, whose metadata
// records no uids: after a rename, --operator finds the operator by the
// new uid, through Flink's hash of it, with the job's entries; after a
// remove, the operator is gone and the other three keep theirs.
func TestFlinkOperatorRenameRemove(t *testing.T) {
	src := filepath.Join(flinkRoot(t), statefulCanonical)
	tmp := t.TempDir()
	ops := statefulOperators(t, src)
	var first string
	for op := range ops {
		if first == "" || op < first {
			first = op
		}
	}
	want := map[string][]string{}
	for op := range ops {
		want[op] = sortedDump(t, src, op, statefulValueState)
	}
	renamed := filepath.Join(tmp, "renamed")
	if code, stdout, stderr := inProcess("operator", "rename", src, first, "enricher-v2", "--out", renamed); code != cli.ExitOK || !strings.Contains(stdout, "Renamed operator "+first) {
		t.Fatalf("operator rename: exit %d: %s%s", code, stdout, stderr)
	}
	if got := sortedDump(t, renamed, "enricher-v2", statefulValueState); !slices.Equal(got, want[first]) {
		t.Errorf("the renamed operator's %s: %q, want %q", statefulValueState, got, want[first])
	}
	if code, _, stderr := inProcess("dump", renamed, "--operator", first, "--state", statefulValueState); code != cli.ExitUsage {
		t.Errorf("dump by the old ID after the rename: exit %d: %s", code, stderr)
	}
	removed := filepath.Join(tmp, "removed")
	if code, stdout, stderr := inProcess("operator", "remove", src, first, "--out", removed); code != cli.ExitOK {
		t.Fatalf("operator remove: exit %d: %s%s", code, stdout, stderr)
	}
	left := statefulOperatorsOf(t, removed)
	if _, kept := left[first]; len(left) != 3 || kept {
		t.Errorf("after removing %s: %v", first, left)
	}
	for op := range left {
		if got := sortedDump(t, removed, op, statefulValueState); !slices.Equal(got, want[op]) {
			t.Errorf("%s after the remove: %q, want %q", op, got, want[op])
		}
	}
	if code, stdout, stderr := inProcess("verify", "--deep", removed); code != cli.ExitOK {
		t.Errorf("verify --deep after the remove: exit %d: %s%s", code, stdout, stderr)
	}
}

// prune-ttl of a Flink savepoint in the shape of the sessions job, keyed by
// String, whose category-counts map has a 7-day TTL that Flink does not
// record: --now and --ttl are required; at two days past the savepoint's
// time the entries last accessed more than five days before it go, as the
// report counts them, and every entry left was accessed after the cutoff.
func TestFlinkPruneTTL(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "in")
	c := flinkgen.SessionsLarge()
	c.Users = 300
	stats, err := flinkgen.WriteDir(context.Background(), src, false, c)
	if err != nil {
		t.Fatal(err)
	}
	ttl := flinkgen.OperatorUID + "/" + flinkgen.CountsState + "=7d"
	out := filepath.Join(tmp, "out")
	if code, _, stderr := inProcess("prune-ttl", src, "--ttl", ttl, "--out", out); code != cli.ExitUsage || !strings.Contains(stderr, "give --now") {
		t.Errorf("prune-ttl without --now: exit %d: %s", code, stderr)
	}
	now := c.Now + 2*24*time.Hour.Milliseconds()
	cutoff := now - flinkgen.CountsTTL.Milliseconds()
	code, stdout, stderr := inProcess("prune-ttl", src, "--now", strconv.FormatInt(now, 10), "--ttl", ttl, "--out", out, "-o", "json")
	if code != cli.ExitOK {
		t.Fatalf("prune-ttl: exit %d: %s", code, stderr)
	}
	type stateReport struct {
		State                  string
		TTLMs                  int64 `json:"ttl_ms"`
		Overridden             bool
		Before, Dropped, After uint64
	}
	var rep struct {
		Now    string
		States []stateReport
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	// The report keeps stateproc's conventions: an instant, a duration in ms.
	if at, err := time.Parse(time.RFC3339Nano, rep.Now); err != nil || at.UnixMilli() != now {
		t.Errorf("now %q (%v), want the instant %d", rep.Now, err, now)
	}
	var counts *stateReport
	for i := range rep.States {
		if rep.States[i].State == flinkgen.CountsState {
			counts = &rep.States[i]
		}
	}
	if counts == nil || counts.Before != stats.CountEntries || counts.Dropped == 0 || counts.After == 0 || counts.Before != counts.Dropped+counts.After {
		t.Fatalf("prune-ttl report %+v, %d entries written", rep.States, stats.CountEntries)
	}
	if counts.TTLMs != flinkgen.CountsTTL.Milliseconds() || !counts.Overridden {
		t.Errorf("prune-ttl report of %s: %+v, want ttl_ms %d, overridden", flinkgen.CountsState, *counts, flinkgen.CountsTTL.Milliseconds())
	}
	lines := dumpLines(t, out, "--operator", flinkgen.OperatorUID, "--state", flinkgen.CountsState)
	if uint64(len(lines)) != counts.After {
		t.Errorf("%d entries left, the report says %d", len(lines), counts.After)
	}
	for _, l := range lines {
		v, _ := l["value"].(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(v["last_access"]))
		if err != nil || at.UnixMilli() <= cutoff {
			t.Errorf("left after the prune: %v (%v)", l, err)
			break
		}
	}
	if code, stdout, stderr := inProcess("verify", "--deep", out); code != cli.ExitOK {
		t.Errorf("verify --deep of the pruned savepoint: exit %d: %s%s", code, stdout, stderr)
	}
}
