package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/examples/gatewaymeter/gateway"
	"github.com/stateproc/stateproc/examples/internal/jobrun"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

func runCommand(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := command().Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// -manifest prints, without running, a manifest that the toolkit reads
// back, with the job's uids, states, Avro schemas and TTLs.
func TestManifest(t *testing.T) {
	for _, leak := range []bool{false, true} {
		args := []string{"-manifest", "-parallelism", "3", "-max-parallelism", "720"}
		if leak {
			args = append(args, "-leak")
		}
		code, out, errOut := runCommand(t, args...)
		if code != jobrun.ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		m, err := savepoint.ReadManifest(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		ops := map[string]savepoint.ManifestOperator{}
		for _, o := range m.Operators {
			ops[o.UID] = o
		}
		for _, uid := range []string{gateway.EventsUID, gateway.PricesUID, gateway.AssembleUID, gateway.TenantCostUID, gateway.TotalsSinkUID, gateway.RecordSinkUID} {
			if _, ok := ops[uid]; !ok {
				t.Fatalf("manifest lacks operator %q", uid)
			}
		}
		assemble := ops[gateway.AssembleUID]
		if assemble.Parallelism != 3 || assemble.MaxParallelism != 720 || assemble.Key == nil || assemble.Key.Kind != serializers.KindString {
			t.Errorf("assemble: %+v", assemble)
		}
		open := state(t, assemble, gateway.OpenState)
		if open.Kind != "value" || open.Value.Kind != serializers.KindAvro || !strings.Contains(open.Value.Schema, `"name":"OpenRequest"`) {
			t.Errorf("open: %+v", open)
		}
		if open.TTL == nil || open.TTL.TTL != "1h0m0s" || open.TTL.Update != "OnCreateAndWrite" || open.TTL.Visibility != "NeverReturnExpired" {
			t.Fatalf("open TTL: %+v", open.TTL)
		}
		if cleanup := open.TTL.CleanupFullSnapshot || open.TTL.SweepBudget > 0; cleanup == leak {
			t.Errorf("leak=%v: open TTL cleanup %+v", leak, open.TTL)
		}
		cost := ops[gateway.TenantCostUID]
		if s := state(t, cost, gateway.USDTotalState); s.Value.Kind != serializers.KindInt64 || s.TTL != nil {
			t.Errorf("usd_total: %+v", s)
		}
		if s := state(t, cost, gateway.PendingState); s.Kind != "list" || !strings.Contains(s.Value.Schema, `"name":"RequestRecord"`) || s.Namespace.Kind != serializers.KindInt64 {
			t.Errorf("pending: %+v", s)
		}
		if len(cost.Broadcast) != 1 || cost.Broadcast[0].Name != gateway.PricesState || !strings.Contains(cost.Broadcast[0].Value.Schema, `"name":"ModelPrices"`) {
			t.Errorf("broadcast states: %+v", cost.Broadcast)
		}
		if len(ops[gateway.EventsUID].OperatorStates) != 1 {
			t.Errorf("events operator states: %+v", ops[gateway.EventsUID].OperatorStates)
		}
	}
}

func state(t *testing.T, o savepoint.ManifestOperator, name string) savepoint.ManifestState {
	t.Helper()
	for _, s := range o.States {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("operator %q has no state %q", o.UID, name)
	return savepoint.ManifestState{}
}

// The command stops with a savepoint, restores it at another parallelism
// and backend, and writes its outputs through file sinks.
func TestStopAndRestore(t *testing.T) {
	dir := t.TempDir()
	sp, out := filepath.Join(dir, "sp"), filepath.Join(dir, "out")
	if code, _, errOut := runCommand(t, "-events", "4000", "-parallelism", "2", "-backend", "pebble", "-stop-after", "2001", "-savepoint", sp); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, _, errOut := runCommand(t, "-events", "4000", "-parallelism", "3", "-restore", sp, "-drain", "-out", out, "-compression", "zstd")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	parts, err := filepath.Glob(filepath.Join(out, "tenant-totals", "part-*"))
	if err != nil || len(parts) != 3 {
		t.Fatalf("tenant totals: %v, %v", parts, err)
	}
	b, err := os.ReadFile(parts[0])
	if err != nil || !bytes.Contains(b, []byte("tenant-")) {
		t.Fatalf("tenant totals: %q, %v", b, err)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-backend", "rocksdb"},
		{"-compression", "lz4"},
		{"-events", "10"},
		{"-parallelism", "0"},
		{"-parallelism", "300", "-max-parallelism", "128"},
		{"-stop-after", "5000", "-events", "1000"},
		{"-no-such-flag"},
		{"stray"},
	} {
		code, _, errOut := runCommand(t, args...)
		if code != jobrun.ExitUsage || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q; want %d and a message", args, code, errOut, jobrun.ExitUsage)
		}
	}
}

// testdata/job-v2.json, which the README and the toolkit's tests check
// savepoints against, is what the v2 build prints: a build whose engine
// adds or redistributes state gets a manifest that says so.
func TestCheckedInManifestIsTheBuilds(t *testing.T) {
	code, out, errOut := runCommand(t, "-manifest", "-open-schema", "v2")
	if code != jobrun.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "job-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Fatal("testdata/job-v2.json is not what -manifest -open-schema v2 prints; regenerate it with go run ./examples/gatewaymeter -manifest -open-schema v2")
	}
}
