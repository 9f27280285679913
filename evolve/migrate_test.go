package evolve_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/evolve"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// writeBase writes a savepoint of the test job with the base schemas and
// returns its directory and the job.
func writeBase(t *testing.T, s jobSchemas) (string, jobInput) {
	t.Helper()
	in := evolveCase{name: "base"}.input(t, s, 16)
	sp := filepath.Join(t.TempDir(), "sp")
	writeSavepoint(t, s, in, engine.Pebble, sp)
	return sp, in
}

func baseSchemas() jobSchemas {
	return jobSchemas{key: stringSchema, mapKey: stringSchema, value: baseValue}
}

// A migration to the savepoint's own job copies every segment as bytes:
// the data files are the input's, and the metadata differs in its lineage
// only.
func TestMigrateAsIsCopiesBytes(t *testing.T) {
	s := baseSchemas()
	sp, in := writeBase(t, s)
	out := filepath.Join(t.TempDir(), "out")
	r := openSavepoint(t, sp)
	if _, err := evolve.Migrate(context.Background(), r, sp, target(t, buildJob(t, s, in, engine.NewCollectSink[readBack]())), evolve.MigrateOptions{}, rewrite.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	for _, name := range r.DataFiles() {
		a, err1 := os.ReadFile(filepath.Join(sp, name))
		b, err2 := os.ReadFile(filepath.Join(out, name))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s differs: %v %v", name, err1, err2)
		}
	}
	got, want := *openSavepoint(t, out).Metadata(), *r.Metadata()
	if len(got.Lineage) != 1 || !strings.HasPrefix(got.Lineage[0], `migrate to job "evolve-case" rewrote no state; from savepoint`) {
		t.Fatalf("lineage %q", got.Lineage)
	}
	got.Lineage = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("metadata\n got  %+v\n want %+v", got, want)
	}
}

// Turning TTL on needs the time to give the values: there is no default.
func TestMigrateTTLOnNeedsNow(t *testing.T) {
	s := baseSchemas()
	sp, in := writeBase(t, s)
	withTTL := s
	withTTL.ttl = true
	out := filepath.Join(t.TempDir(), "out")
	r := openSavepoint(t, sp)
	tg := target(t, buildJob(t, withTTL, in, engine.NewCollectSink[readBack]()))
	_, err := evolve.Migrate(context.Background(), r, sp, tg, evolve.MigrateOptions{}, rewrite.Options{Out: out})
	if !errors.Is(err, rewrite.ErrRefused) || !strings.Contains(err.Error(), "TTL is turned on for op/value, op/list, op/map: give --now") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("refused, yet written")
	}
	const now = t0 + 12345
	rep, err := evolve.Migrate(context.Background(), r, sp, tg, evolve.MigrateOptions{Now: now, HasNow: true}, rewrite.Options{Out: out})
	if err != nil || int64(rep.Now) != now {
		t.Fatalf("%v, now %d", err, rep.Now)
	}
	mr := openSavepoint(t, out)
	for _, seg := range sptest.OperatorSegments(t, mr, 1) {
		if !seg.Ref.Timer && seg.Ref.State < 3 && (seg.MinTimestamp != now || seg.MaxTimestamp != now) {
			t.Fatalf("segment %+v: timestamps not %d", seg, now)
		}
	}
}

// A stored value that its own schema cannot decode is corrupt input: the
// error names the file, key group, segment and key, and nothing is
// published.
func TestMigrateCorruptValue(t *testing.T) {
	s := baseSchemas()
	sp, in := writeBase(t, s)
	bad := filepath.Join(t.TempDir(), "bad")
	copyWithBadValue(t, sp, bad)
	newer := s
	newer.value = readSchema(t, "field-added-with-default.new")
	tg := target(t, buildJob(t, newer, in, engine.NewCollectSink[readBack]()))
	r := openSavepoint(t, bad)
	out := filepath.Join(t.TempDir(), "out")
	_, err := evolve.Migrate(context.Background(), r, bad, tg, evolve.MigrateOptions{}, rewrite.Options{Out: out})
	var located *savepoint.Error
	if !errors.Is(err, savepoint.ErrCorrupt) || !errors.As(err, &located) || located.KeyGroup < 0 || !strings.Contains(err.Error(), `entry 0 of the segment at this offset: the value of key "k-`) {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("failed, yet published")
	}
}

// copyWithBadValue copies the savepoint at src to dst, segment by segment,
// with the first value of state "value" cut to one byte: still framed, no
// longer a datum.
func copyWithBadValue(t *testing.T, src, dst string) {
	t.Helper()
	ctx := context.Background()
	r := openSavepoint(t, src)
	staging, err := storage.Stage(dst, false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := snapshotfmt.NewWriter(staging, r.Metadata(), snapshotfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	f, err := w.CreateDataFile(ctx, "data")
	if err != nil {
		t.Fatal(err)
	}
	spoiled := false
	for op := range r.Metadata().Operators {
		for _, seg := range sptest.OperatorSegments(t, r, op) {
			sw, err := f.Segment(seg.Ref, seg.KeyGroup)
			if err != nil {
				t.Fatal(err)
			}
			it := savepoint.SegmentEntries(ctx, r, seg)
			for it.Next() {
				e := *it.Entry()
				if !spoiled && r.Metadata().Operators[op].UID == "op" && seg.Ref == (savepoint.StateRef{Operator: op}) {
					e.Value, spoiled = []byte{0x7f}, true
				}
				if err := sw.Add(&e); err != nil {
					t.Fatal(err)
				}
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if err := sw.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSchemaTarget(t *testing.T) {
	s := baseSchemas()
	sp, _ := writeBase(t, s)
	r := openSavepoint(t, sp)
	newer := readSchema(t, "field-added-with-default.new")
	tg, err := evolve.SchemaTarget(r.Metadata(), []evolve.SchemaChange{{Operator: "op", State: "map", Schema: newer, From: "new.avsc"}})
	if err != nil {
		t.Fatal(err)
	}
	if tg.Name != "--schema op/map=new.avsc" {
		t.Errorf("name %q", tg.Name)
	}
	rep, err := evolve.Check(context.Background(), r, tg, evolve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, it := range rep.Items {
		if it.Verdict.String() != "compatible as is" {
			changed = append(changed, it.Name+": "+it.Verdict.String())
		}
	}
	if !reflect.DeepEqual(changed, []string{"map: compatible after migration"}) {
		t.Fatalf("changed %q", changed)
	}
	if r.Metadata().Operators[1].States[2].Value.Schema == tg.Operators[1].States[2].Value.Schema {
		t.Fatal("the savepoint's metadata was modified")
	}
	for _, c := range []struct {
		change evolve.SchemaChange
		want   string
	}{
		{evolve.SchemaChange{Operator: "nope", State: "map", Schema: newer}, `no operator "nope"`},
		{evolve.SchemaChange{Operator: "op", State: "nope", Schema: newer}, `operator "op" has no keyed state "nope"`},
		{evolve.SchemaChange{Operator: "op", State: "map", Schema: "{", From: "x.avsc"}, "x.avsc: the schema is not JSON"},
		{evolve.SchemaChange{Operator: "op", State: "map", Schema: `{"type":"nosuchtype"}`, From: "y.avsc"}, "y.avsc: schema does not parse: unknown type: nosuchtype"},
		{evolve.SchemaChange{Operator: "op", State: "map", Schema: `{"type":"record","name":"R","fields":[{"name":"i","type":"int","default":1.9}]}`, From: "z.avsc"},
			"z.avsc: schema does not parse: field R.i: default 1.9 is not an int"},
		{evolve.SchemaChange{Operator: "input", State: "splits", Schema: newer}, `operator "input" has no keyed state "splits"`},
	} {
		if _, err := evolve.SchemaTarget(r.Metadata(), []evolve.SchemaChange{c.change}); !errors.Is(err, rewrite.ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.change, err, c.want)
		}
	}
}

// A manifest naming one uid twice is refused.
func TestJobTargetDuplicateUID(t *testing.T) {
	m := savepoint.Manifest{Job: "j", Operators: []savepoint.ManifestOperator{{UID: "a", Name: "A", Parallelism: 1, MaxParallelism: 128}, {UID: "a", Name: "B", Parallelism: 1, MaxParallelism: 128}}}
	if _, err := evolve.JobTarget(m); err == nil || !strings.Contains(err.Error(), `two operators have uid "a"`) {
		t.Fatalf("got %v", err)
	}
}

// A manifest whose serializers do not parse is refused, whether or not the
// savepoint has their operator: a typo in a build's manifest is not an
// incompatible savepoint.
func TestJobTargetRefusesBadSerializers(t *testing.T) {
	avroSnap := func(schema string) serializers.Snapshot {
		return serializers.Snapshot{Kind: serializers.KindAvro, Schema: schema}
	}
	void := serializers.Snapshot{Kind: serializers.KindVoid}
	str := serializers.Snapshot{Kind: serializers.KindString}
	for _, c := range []struct {
		name string
		op   savepoint.ManifestOperator
		want string
	}{
		{"value type", savepoint.ManifestOperator{Key: &str, States: []savepoint.ManifestState{{Name: "s", Kind: "value", Namespace: void, Value: avroSnap(`{"type":"nosuchtype"}`)}}},
			`operator "a" state "s": value: serializers: malformed snapshot: avro: schema does not parse: unknown type: nosuchtype`},
		{"int default", savepoint.ManifestOperator{Key: &str, States: []savepoint.ManifestState{{Name: "s", Kind: "value", Namespace: void,
			Value: avroSnap(`{"type":"record","name":"R","fields":[{"name":"i","type":"int","default":1.9}]}`)}}},
			`operator "a" state "s": value: serializers: malformed snapshot: avro: schema does not parse: field R.i: default 1.9 is not an int`},
		{"kind", savepoint.ManifestOperator{Key: &str, States: []savepoint.ManifestState{{Name: "s", Kind: "value", Namespace: void, Value: serializers.Snapshot{Kind: "frobnicate"}}}},
			`operator "a" state "s": value: serializers: malformed snapshot: unknown kind "frobnicate"`},
		{"key", savepoint.ManifestOperator{Key: &serializers.Snapshot{Kind: serializers.KindAvro}}, `operator "a" key: serializers: malformed snapshot: avro: schema does not parse`},
		{"map key", savepoint.ManifestOperator{Key: &str, States: []savepoint.ManifestState{{Name: "m", Kind: "map", Namespace: void, MapKey: &serializers.Snapshot{Kind: "list"}, Value: str}}},
			`operator "a" state "m": map key: serializers: malformed snapshot: list takes 1 nested serializers, has 0`},
		{"timer namespace", savepoint.ManifestOperator{Key: &str, Timers: []savepoint.ManifestTimerService{{Name: "t", Namespace: serializers.Snapshot{}}}},
			`operator "a" timer service "t": namespace: serializers: malformed snapshot: unknown kind ""`},
		{"operator state", savepoint.ManifestOperator{OperatorStates: []savepoint.ManifestOpState{{Name: "o", Distribution: "even-split", Element: avroSnap(`"nosuchtype"`)}}},
			`operator "a" state "o": element: serializers: malformed snapshot: avro: schema does not parse`},
		{"broadcast value", savepoint.ManifestOperator{Broadcast: []savepoint.ManifestBroadcast{{Name: "b", Key: str, Value: avroSnap(`{"type":"enum","name":"E","symbols":[]}`)}}},
			`operator "a" broadcast state "b": value: serializers: malformed snapshot: avro: schema does not parse`},
	} {
		c.op.UID, c.op.Name, c.op.Parallelism, c.op.MaxParallelism = "a", "A", 1, 128
		_, err := evolve.JobTarget(savepoint.Manifest{Job: "j", Operators: []savepoint.ManifestOperator{c.op}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
