package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/examples/internal/jobrun"
	"github.com/stateproc/stateproc/examples/sessionfeatures/sessions"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
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
	code, out, errOut := runCommand(t, "-manifest", "-parallelism", "4")
	if code != jobrun.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m, err := savepoint.ReadManifest(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var features *savepoint.ManifestOperator
	uids := map[string]bool{}
	for i, o := range m.Operators {
		uids[o.UID] = true
		if o.UID == sessions.FeaturesUID {
			features = &m.Operators[i]
		}
	}
	if !uids[sessions.ClicksUID] || !uids[sessions.SummariesUID] || features == nil {
		t.Fatalf("operators: %v", uids)
	}
	if features.Parallelism != 4 || features.MaxParallelism != 128 || len(features.Timers) == 0 {
		t.Errorf("session-features: %+v", features)
	}
	var session, counts *savepoint.ManifestState
	for i, s := range features.States {
		switch s.Name {
		case sessions.SessionState:
			session = &features.States[i]
		case sessions.CountsState:
			counts = &features.States[i]
		}
	}
	if session == nil || session.Value.Kind != serializers.KindAvro || !strings.Contains(session.Value.Schema, `"name":"SessionAgg"`) || session.TTL != nil {
		t.Errorf("session: %+v", session)
	}
	if counts == nil || counts.Kind != "map" || counts.MapKey == nil || counts.MapKey.Kind != serializers.KindString || counts.Value.Kind != serializers.KindInt64 {
		t.Fatalf("category-counts: %+v", counts)
	}
	if c := counts.TTL; c == nil || c.TTL != "168h0m0s" || c.Update != "OnCreateAndWrite" || c.Visibility != "NeverReturnExpired" || c.SweepBudget != 1000 {
		t.Errorf("category-counts TTL: %+v", c)
	}
}

func TestRunWithOutput(t *testing.T) {
	dir := t.TempDir()
	out, sp := filepath.Join(dir, "out"), filepath.Join(dir, "sp")
	if code, _, errOut := runCommand(t, "-users", "300", "-backend", "pebble", "-drain", "-out", out, "-savepoint", sp); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	parts, err := filepath.Glob(filepath.Join(out, "part-*"))
	if err != nil || len(parts) == 0 {
		t.Fatalf("outputs: %v, %v", parts, err)
	}
	b, err := os.ReadFile(parts[0])
	if err != nil || !bytes.HasPrefix(b, []byte("u-")) {
		t.Fatalf("summaries: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(sp, snapshotfmt.MetadataName)); err != nil {
		t.Fatal(err)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-users", "3"},
		{"-backend", "rocksdb"},
		{"-max-parallelism", "100000"},
		{"-checkpoints", "x", "-checkpoint-interval", "0s"},
	} {
		if code, _, errOut := runCommand(t, args...); code != jobrun.ExitUsage || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}
