package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// The JSON output of every command is a contract that scripts rely on:
// testdata/json/COMMAND.fields lists every field, as a path (objects by
// member, arrays as []) and a JSON type, and fields are only ever added.
// TestJSONContract runs every command with -o json on the demo savepoint
// and fails when a listed field is missing or has another type, or when
// the output has a field the list does not have (add it there with
// -update). Subtrees that hold a savepoint's data (a decoded
// key or value) are listed as "data": their shape is the data's.

// contractCase is one command line whose output the contract of its
// command covers; several lines of one command cover its optional fields.
type contractCase struct {
	command string
	args    []string
	// lines: the output is JSON lines, each an object.
	lines bool
	// exit is the exit code the command line ends with.
	exit int
}

// dataPaths are the subtrees that hold decoded data.
var dataPaths = map[string][]string{
	"dump":    {"key", "namespace", "map_key", "value"},
	"inspect": {"top_keys.by_entries[].key", "top_keys.by_bytes[].key"},
	"diff":    diffDataPaths(),
}

func TestJSONContract(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "sp")
	if err := sptest.Write(sp, demoMeta(), demoEntries(), snapshotfmt.Options{}); err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(dir, "job.json")
	var manifest bytes.Buffer
	if err := savepoint.NewManifest("demo", demoMeta().Operators).Write(&manifest); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(job, manifest.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := func(name string) string { return filepath.Join(dir, name) }
	timers := out("timers")
	if err := writeTimerLeak(timers); err != nil {
		t.Fatal(err)
	}
	// The session record gains a field, with a default (a migration) and
	// without one (incompatible).
	schema := func(name, field string) string {
		f := out(name)
		s := strings.Replace(sessionSchema, `{"name":"started","type":"long"}`, `{"name":"started","type":"long"},`+field, 1)
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return "features/session=" + f
	}
	v2 := schema("v2.avsc", `{"name":"device","type":"string","default":"unknown"}`)
	bad := schema("bad.avsc", `{"name":"device","type":"string"}`)
	cases := []contractCase{
		{command: "inspect", args: []string{"inspect", "-o", "json", sp}},
		{command: "inspect", args: []string{"inspect", "--scan", "--top", "2", "-o", "json", sp}},
		{command: "verify", args: []string{"verify", "--deep", "-o", "json", sp}},
		{command: "dump", lines: true, args: []string{"dump", sp, "--operator", "features", "--state", "category-counts"}},
		{command: "dump", lines: true, args: []string{"dump", sp, "--operator", "features", "--state", "events"}},
		{command: "dump", lines: true, args: []string{"dump", sp, "--operator", "features", "--state", "clicks"}},
		{command: "dump", lines: true, args: []string{"dump", sp, "--operator", "features", "--state", "session-end"}},
		{command: "dump", lines: true, args: []string{"dump", sp, "--operator", "source", "--state", "offsets"}},
		{command: "dump", lines: true, args: []string{"dump", sp, "--operator", "source", "--state", "rules"}},
		{command: "size", args: []string{"size", "-o", "json", sp}},
		{command: "size", args: []string{"size", "-o", "json", "--plan", "../sizing/testdata/sessionfeatures.yaml"}},
		{command: "size", args: []string{"size", "-o", "json", timers}},
		{command: "export", args: []string{"export", sp, "--out", out("export"), "-o", "json"}},
		{command: "bootstrap", args: []string{"bootstrap", "--job", job, "--from", out("export"), "--out", out("bootstrapped"), "-o", "json"}},
		{command: "bootstrap", args: []string{"bootstrap", "--job", job, "--from", out("export"), "--dry-run", "-o", "json"}},
		{command: "rescale", args: []string{"rescale", sp, "--max-parallelism", "256", "--out", out("rescaled"), "-o", "json"}},
		{command: "prune-ttl", args: []string{"prune-ttl", sp, "--out", out("pruned"), "-o", "json"}},
		{command: "operator", args: []string{"operator", "remove", sp, "accounts", "--dry-run", "-o", "json"}},
		{command: "operator", args: []string{"operator", "remove", sp, "accounts", "--out", out("removed"), "-o", "json"}},
		{command: "operator", args: []string{"operator", "rename", sp, "accounts", "ledger", "--dry-run", "-o", "json"}},
		{command: "check", args: []string{"check", sp, "--job", job, "-o", "json"}},
		{command: "check", args: []string{"check", sp, "--schema", v2, "-o", "json"}},
		{command: "check", args: []string{"check", sp, "--schema", bad, "-o", "json"}, exit: cli.ExitIncompatible},
		{command: "migrate", args: []string{"migrate", sp, "--job", job, "--out", out("migrated"), "-o", "json"}},
		{command: "migrate", args: []string{"migrate", sp, "--schema", v2, "--out", out("migrated2"), "-o", "json"}},
		{command: "migrate", args: []string{"migrate", sp, "--schema", bad, "--out", out("refused"), "-o", "json"}, exit: cli.ExitIncompatible},
		{command: "report", args: []string{"report", sp, "--out", out("report.html"), "-o", "json"}},
		{command: "report", args: []string{"report", sp, out("rescaled"), out("pruned"), "--out", out("growth.html"), "-o", "json"}},
		{command: "diff", args: []string{"diff", sp, sp, "-o", "json"}},
		{command: "diff", args: []string{"diff", sp, out("rescaled"), "-o", "json"}},
		{command: "diff", args: []string{"diff", sp, out("pruned"), "--keys", "2", "-o", "json"}},
		{command: "diff", args: []string{"diff", sp, out("migrated2"), "--keys", "1", "--exit-code", "-o", "json"}, exit: cli.ExitDiffer},
	}
	// Apache Flink's savepoints add the fields of what Flink keeps: an
	// operator's ID, notes, unread parts, opaque values, sizing's basis.
	root := filepath.Join("..", "..", "shared", "flink-savepoints", "flink-tests", "src", "test", "resources")
	_, err := os.Stat(root)
	withFlink := err == nil
	if withFlink {
		scala := filepath.Join(root, "stateful-scala-udf-migration-itcase-flink1.10-jobmanager-savepoint")
		changelog := filepath.Join(root, "new-stateful-udf-migration-itcase-flink1.17-hashmap-checkpoint")
		heap := filepath.Join(root, "new-stateful-udf-migration-itcase-flink1.18-hashmap-savepoint-native")
		cases = append(cases,
			contractCase{command: "inspect", args: []string{"inspect", "-o", "json", scala}},
			contractCase{command: "inspect", args: []string{"inspect", "-o", "json", changelog}},
			contractCase{command: "verify", args: []string{"verify", "--deep", "-o", "json", scala}},
			contractCase{command: "dump", lines: true, args: []string{"dump", heap, "--operator", "d5c8b168c6cbfe8c507a10f88b325243", "--state", "state-name"}},
			contractCase{command: "export", args: []string{"export", heap, "--out", out("flink-export"), "-o", "json"}},
			contractCase{command: "size", args: []string{"size", "-o", "json", heap}},
		)
		// The rewrites of Flink savepoints keep the contract of stateproc's:
		// metadata version 4 records no uid (the ID stands for it), version 5
		// (Flink 2.0) records uids and names.
		snappy := filepath.Join(root, "new-stateful-udf-migration-itcase-flink1.19-rocksdb-savepoint")
		v5 := filepath.Join(root, "new-stateful-udf-migration-itcase-flink2.0-hashmap-savepoint")
		op := slices.Min(slices.Collect(maps.Keys(statefulOperators(t, snappy))))
		cases = append(cases,
			contractCase{command: "rescale", args: []string{"rescale", snappy, "--max-parallelism", "32", "--out", out("flink-rescaled"), "-o", "json"}},
			contractCase{command: "rescale", args: []string{"rescale", v5, "--max-parallelism", "256", "--dry-run", "-o", "json"}},
			contractCase{command: "operator", args: []string{"operator", "remove", snappy, op, "--out", out("flink-removed"), "-o", "json"}},
			contractCase{command: "operator", args: []string{"operator", "rename", snappy, op, "renamed", "--dry-run", "-o", "json"}},
			contractCase{command: "operator", args: []string{"operator", "rename", v5, "CheckpointingKeyedStateFlatMap1", "renamed", "--out", out("flink-renamed"), "-o", "json"}},
			contractCase{command: "convert", args: []string{"convert", filepath.Join(root, "new-stateful-udf-migration-itcase-flink2.0-rocksdb-savepoint-native"), "--out", out("flink-converted"), "-o", "json"}},
			contractCase{command: "convert", args: []string{"convert", filepath.Join(root, "new-stateful-udf-migration-itcase-flink1.20-rocksdb-checkpoint"), "--dry-run", "-o", "json"}},
		)
	} else {
		t.Logf("the Flink savepoints are not there (%v): the fields only they give are not checked", err)
	}
	// prune-ttl of a Flink savepoint needs a state with TTL, which none of
	// the fixtures has: the one of the sessions job's shape that flinkgen
	// writes through the Flink writer has.
	flinkSessions := out("flink-sessions")
	c := flinkgen.SessionsLarge()
	c.Users = 50
	if _, err := flinkgen.WriteDir(context.Background(), flinkSessions, false, c); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, contractCase{command: "prune-ttl", args: []string{"prune-ttl", flinkSessions, "--now", jsonvalue.Time(c.Now + 2*24*time.Hour.Milliseconds()),
		"--ttl", flinkgen.OperatorUID + "/" + flinkgen.CountsState + "=7d", "--out", out("flink-pruned"), "-o", "json"}})
	// verify lists the orphans of a savepoint in a bucket: a data file that
	// a dead run left beside the demo savepoint there gives those fields.
	withBucket := storetest.Binary() != "" || os.Getenv("CI") != ""
	if withBucket {
		f := newBucketFixture(t)
		if _, err := f.srv.Client(f.srv.Endpoint()).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("state"),
			Key: aws.String("in/sp/op001-00000-0123456789abcdef.data"), Body: strings.NewReader("left by a dead run")}); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, contractCase{command: "verify", args: []string{"verify", "-o", "json", f.url("in/sp")}})
	} else {
		t.Log("versitygw is not there: the fields only a savepoint in a bucket gives are not checked")
	}
	got := map[string]map[string]string{}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		if code := cli.Main(context.Background(), c.args, &stdout, &stderr); code != c.exit {
			t.Fatalf("stateproc %s: exit %d: %s", strings.Join(c.args, " "), code, stderr.Bytes())
		}
		fields := got[c.command]
		if fields == nil {
			fields = map[string]string{}
			got[c.command] = fields
		}
		docs := [][]byte{stdout.Bytes()}
		if c.lines {
			docs = bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
		}
		for _, d := range docs {
			var v any
			if err := json.Unmarshal(d, &v); err != nil {
				t.Fatalf("stateproc %s: %v", strings.Join(c.args, " "), err)
			}
			if err := flatten(fields, "", v, dataPaths[c.command]); err != nil {
				t.Fatalf("stateproc %s: %v", strings.Join(c.args, " "), err)
			}
		}
	}
	for command, fields := range got {
		file := filepath.Join("testdata", "json", command+".fields")
		if *update {
			if err := os.WriteFile(file, []byte(formatFields(fields)), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := readFields(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range slices.Sorted(maps.Keys(want)) {
			switch g, ok := fields[p]; {
			case !ok && !withFlink && flinkOnly(p):
			case !ok && !withBucket && bucketOnly(p):
			case !ok:
				t.Errorf("%s: field %s (%s) is gone: the JSON output only ever gains fields", command, p, want[p])
			case g != want[p]:
				t.Errorf("%s: field %s is %s, the contract says %s", command, p, g, want[p])
			}
		}
		for _, p := range slices.Sorted(maps.Keys(fields)) {
			if _, ok := want[p]; !ok {
				t.Errorf("%s: field %s (%s) is not in %s: add it there (go test ./cli -run TestJSONContract -update)", command, p, fields[p], file)
			}
		}
	}
}

// bucketOnly reports a field that only a savepoint in a bucket gives.
func bucketOnly(p string) bool { return p == "orphans" || strings.HasPrefix(p, "orphans[]") }

// flinkOnly reports a field that only Apache Flink's savepoints give.
func flinkOnly(p string) bool {
	for _, f := range []string{"savepoint.notes", "operators[].id", "operators[].name", "id", "new_id", "name", "new_name", "operators[].notes", "operators[].unread", "states[].notes", "opaque", "basis"} {
		if p == f || strings.HasPrefix(p, f+"[]") || strings.HasPrefix(p, f+".") {
			return true
		}
	}
	return false
}

// flatten records the type of every field of v under prefix. A field seen
// as null somewhere and as a value elsewhere keeps the value's type.
func flatten(fields map[string]string, prefix string, v any, data []string) error {
	if slices.Contains(data, prefix) {
		fields[prefix] = "data"
		return nil
	}
	var typ string
	switch x := v.(type) {
	case nil:
		typ = "null"
	case bool:
		typ = "bool"
	case float64:
		typ = "number"
	case string:
		typ = "string"
	case []any:
		typ = "array"
		for _, e := range x {
			if err := flatten(fields, prefix+"[]", e, data); err != nil {
				return err
			}
		}
	case map[string]any:
		typ = "object"
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if err := flatten(fields, p, e, data); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s: unexpected %T", prefix, v)
	}
	if prefix == "" {
		return nil
	}
	switch old, ok := fields[prefix]; {
	case !ok || old == "null":
		fields[prefix] = typ
	case typ != "null" && old != typ:
		return fmt.Errorf("field %s is %s and %s", prefix, old, typ)
	}
	return nil
}

func formatFields(fields map[string]string) string {
	var b strings.Builder
	for _, p := range slices.Sorted(maps.Keys(fields)) {
		fmt.Fprintf(&b, "%s %s\n", p, fields[p])
	}
	return b.String()
}

func readFields(file string) (map[string]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		p, typ, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("%s: bad line %q", file, line)
		}
		out[p] = typ
	}
	return out, nil
}

// writeTimerLeak writes into dir a savepoint whose processing-time timers
// pile up on one key and lie overdue on another, so that size gives both
// of its timer findings.
func writeTimerLeak(dir string) error {
	meta := &savepoint.Metadata{ID: 1, CreatedAt: demoNow, Watermark: math.MinInt64, Operators: []savepoint.Operator{{
		UID: "meter", Name: "Meter", Parallelism: 1, MaxParallelism: 128, KeyHash: keygroup.Murmur3,
		Key:    snap(serializers.KindString),
		Timers: []savepoint.TimerService{{Name: "processing-time", Namespace: snap(serializers.KindVoid)}},
	}}}
	var timers []savepoint.Entry
	for d := range int64(4) {
		timers = append(timers, savepoint.Entry{Key: []byte("user-1"), Timestamp: demoNow + (27+d)*day})
	}
	timers = append(timers, savepoint.Entry{Key: []byte("stale-1"), Timestamp: demoNow - 3*day})
	return sptest.Write(dir, meta, map[savepoint.StateRef][]savepoint.Entry{{Timer: true}: timers}, snapshotfmt.Options{})
}
