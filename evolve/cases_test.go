package evolve_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/evolve"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// evolveCase is one pair of schemas under testdata/: NAME.old.avsc and
// NAME.new.avsc. By default they are the values' schemas; keyed and mapKey
// put them on the key or the map key instead, with values of baseValue.
type evolveCase struct {
	name string
	// file is the pair's name when it differs from the case's.
	file           string
	keyed, mapKeyd bool
	// data, when set, names the schema (testdata/DATA.avsc) the test's old
	// values are generated with: its datums are datums of the old schema too.
	data             string
	ttlOld, ttlNew   bool
	verdict          compat.Verdict
	reason           string // a part of the reason
	backend          engine.BackendKind
	dataDependent    bool // the verdict comes from reading the values
	expectUnreadable bool
}

const (
	stringSchema = `"string"`
	baseValue    = `{"type":"record","name":"Request","namespace":"stateproc.test","fields":[{"name":"id","type":"string"},{"name":"tokens","type":"int"}]}`
)

func evolveCases() []evolveCase {
	after, incompatible := compat.AfterMigration, compat.Incompatible
	return []evolveCase{
		{name: "field-added-with-default", verdict: after, reason: "field Request.region added with a default"},
		{name: "field-removed", verdict: after, reason: "field Request.note removed", backend: engine.Pebble},
		{name: "field-renamed-alias", verdict: after, reason: "field Request.tokens renamed to prompt_tokens"},
		{name: "promotions", verdict: after, reason: "Request.a: int promoted to long; Request.b: int promoted to float; Request.c: int promoted to double; Request.d: long promoted to float; Request.e: long promoted to double; Request.f: float promoted to double"},
		{name: "string-bytes", verdict: after, reason: "Request.b: bytes promoted to string: values that are not UTF-8 have no reading; Request.s: string promoted to bytes", dataDependent: true, backend: engine.Pebble},
		{name: "enum-symbol-added", verdict: after, reason: "Request.tier: enum stateproc.test.Tier symbol ENTERPRISE added"},
		// A removed symbol that no stored value uses: as a removed union
		// branch, it fails only values that use it.
		{name: "enum-symbol-removed-unused", file: "enum-symbol-removed", data: "enum-symbol-removed.unused", verdict: after, reason: "Request.tier: enum stateproc.test.Tier symbol ENTERPRISE removed: values that use it have no reading", dataDependent: true, backend: engine.Pebble},
		// A null value of a generic Avro state: written, snapshotted,
		// restored, read and migrated on both backends.
		{name: "null-values-heap", file: "null-values", data: "null-values.data", verdict: after, reason: "union branches changed"},
		{name: "null-values-pebble", file: "null-values", data: "null-values.data", verdict: after, reason: "union branches changed", backend: engine.Pebble},
		{name: "union-widened", verdict: after, reason: "Request.note: union branches changed"},
		{name: "nested-records", verdict: after, reason: "field Request.meta.zone added with a default", backend: engine.Pebble},
		{name: "ttl-on", file: "ttl", ttlNew: true, verdict: after, reason: "TTL turned on; Request.tokens: int promoted to long"},
		{name: "ttl-off", file: "ttl", ttlOld: true, verdict: after, reason: "TTL turned off; Request.tokens: int promoted to long", backend: engine.Pebble},
		// hamba's Resolve refuses this pair, which its Compatible accepts.
		{name: "union-promoted", verdict: after, reason: "Request.tokens: union read as long"},
		{name: "union-narrowed-unused", file: "union-narrowed", data: "union-narrowed.unused", verdict: after, reason: "Request.note: union narrowed: long matches no branch of the reader union", dataDependent: true},

		{name: "field-added-without-default", verdict: incompatible, reason: "field Request.region added without a default"},
		{name: "enum-symbol-removed", verdict: incompatible, reason: "Request.tier: enum symbol ENTERPRISE is not in the new schema (first at key group ",
			dataDependent: true, expectUnreadable: true},
		{name: "several-incompatible", verdict: incompatible, reason: "field Request.region added without a default; Request.tokens: type change long→int cannot be promoted", backend: engine.Pebble},
		{name: "no-promotion", verdict: incompatible, reason: "Request.tokens: type change long→int cannot be promoted", backend: engine.Pebble},
		{name: "logical-type-changed", verdict: incompatible, reason: "Request.ts: logical type changed (timestamp-millis → timestamp-micros)"},
		{name: "key-type-changed", keyed: true, verdict: incompatible, reason: "key serializer changed: field Key.region added with a default (keys cannot be migrated: their bytes decide their key groups)"},
		{name: "map-key-type-changed", mapKeyd: true, verdict: incompatible, reason: "map key serializer changed: Key.tenant: string promoted to bytes"},
		{name: "union-narrowed-used", file: "union-narrowed", verdict: incompatible, reason: "Request.note: union narrowed: long matches no branch of the reader union (first at key group ",
			dataDependent: true, expectUnreadable: true, backend: engine.Pebble},
	}
}

func readSchema(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".avsc"))
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(b))
}

// schemas returns the old and new builds of the test job for c.
func (c evolveCase) schemas(t testing.TB) (old, new jobSchemas) {
	file := c.file
	if file == "" {
		file = c.name
	}
	o, n := readSchema(t, file+".old"), readSchema(t, file+".new")
	old = jobSchemas{key: stringSchema, mapKey: stringSchema, value: baseValue, ttl: c.ttlOld}
	new = jobSchemas{key: stringSchema, mapKey: stringSchema, value: baseValue, ttl: c.ttlNew}
	switch {
	case c.keyed:
		old.key, new.key = o, n
	case c.mapKeyd:
		old.mapKey, new.mapKey = o, n
	default:
		old.value, new.value = o, n
	}
	return old, new
}

// input generates the writes of the old job: random values of the old
// schema (or of c.data), and keys and map keys of the old key schemas.
func (c evolveCase) input(t testing.TB, old jobSchemas, n int) jobInput {
	t.Helper()
	dataSchema := old.value
	if c.data != "" {
		dataSchema = readSchema(t, c.data)
	}
	parsed, err := avro.ParseWithCache(dataSchema, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
	ser := mustGeneric(t, old.value)
	key := func(schema string, prefix string, i int) any {
		if schema == stringSchema {
			return fmt.Sprintf("%s-%03d", prefix, i)
		}
		return map[string]any{"tenant": fmt.Sprintf("%s-%03d", prefix, i)}
	}
	var in jobInput
	for i := range n {
		v, err := ser.DecodeAny(datum(rng, nil, parsed))
		if err != nil {
			t.Fatal(err)
		}
		in.values = append(in.values, v)
		in.keys = append(in.keys, key(old.key, "k", i))
		in.mapKeys = append(in.mapKeys, key(old.mapKey, "m", i))
	}
	return in
}

// expected is what the new job reads back for each key once old values are
// migrated: each value rewritten by the serializers' migration, decoded
// with the new schema; where hamba can resolve the pair as well, its
// reading must be the same.
func (c evolveCase) expected(t testing.TB, old, new jobSchemas, in jobInput) map[string]readBack {
	t.Helper()
	m, err := serializers.Migrator(serializers.Snapshot{Kind: serializers.KindAvro, Schema: old.value}, serializers.Snapshot{Kind: serializers.KindAvro, Schema: new.value}, serializers.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldSer, newSer := mustGeneric(t, old.value), mustGeneric(t, new.value)
	hamba := hambaResolver(t, old.value, new.value)
	migrated := make([]any, len(in.values))
	for i, v := range in.values {
		src, err := oldSer.AppendAny(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		out, err := m(nil, src)
		if err != nil {
			t.Fatalf("migrating value %d: %v", i, err)
		}
		if migrated[i], err = newSer.DecodeAny(out); err != nil {
			t.Fatal(err)
		}
		if hamba != nil {
			if want, ok := hamba(src); ok && !bytes.Equal(want, out) {
				t.Fatalf("value %d: migrated to %x, hamba resolves to %x", i, out, want)
			}
		}
	}
	want := map[string]readBack{}
	n := len(in.keys)
	for i, k := range in.keys {
		next := (i + 1) % n
		first, second := [2]any{in.mapKeys[i], migrated[i]}, [2]any{in.mapKeys[next], migrated[next]}
		if fmt.Sprint(in.mapKeys[next]) < fmt.Sprint(in.mapKeys[i]) {
			first, second = second, first // map entries come in key order
		}
		want[fmt.Sprint(k)] = readBack{Key: k, Value: migrated[i], HasValue: true, List: []any{migrated[i], migrated[next]}, Map: [][2]any{first, second}}
	}
	return want
}

// hambaResolver returns hamba's reading of an old value for the new schema,
// encoded with the new schema, when hamba resolves the pair; ok is false
// for a value whose generic reading hamba cannot encode back (unions).
func hambaResolver(t testing.TB, old, new string) func(src []byte) ([]byte, bool) {
	w, err1 := avro.ParseWithCache(old, "", &avro.SchemaCache{})
	r, err2 := avro.ParseWithCache(new, "", &avro.SchemaCache{})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	resolved, err := avro.NewSchemaCompatibility().Resolve(r, w)
	if err != nil {
		return nil
	}
	newSer := mustGeneric(t, new)
	return func(src []byte) ([]byte, bool) {
		var v any
		if err := avro.Unmarshal(resolved, src, &v); err != nil {
			t.Fatalf("hamba decode: %v", err)
		}
		out, err := newSer.AppendAny(nil, v)
		return out, err == nil
	}
}

func openSavepoint(t testing.TB, dir string) *snapshotfmt.Reader {
	t.Helper()
	r, err := snapshotfmt.Open(context.Background(), storage.LocalDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// target is the new job as its manifest describes it, through JSON as the
// CLI reads it.
func target(t testing.TB, j *engine.Job) evolve.Target {
	t.Helper()
	m, err := j.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := savepoint.ReadManifest(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := evolve.JobTarget(back)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// The cases of testdata/ through check, the engine and migrate: check says
// incompatible exactly when the engine's restore fails, and with the
// engine's reason; otherwise the engine restores and reads the migrated
// values, and migrate writes a savepoint that the new job restores as it is,
// to the same values. An incompatible savepoint migrate refuses, writing
// nothing.
func TestCasesAgree(t *testing.T) {
	const keys = 24
	for _, c := range evolveCases() {
		t.Run(c.name, func(t *testing.T) {
			backend := c.backend
			if backend == "" {
				backend = engine.Heap
			}
			dir := t.TempDir()
			sp, migrated := filepath.Join(dir, "sp"), filepath.Join(dir, "migrated")
			old, new := c.schemas(t)
			in := c.input(t, old, keys)
			writeSavepoint(t, old, in, backend, sp)
			r := openSavepoint(t, sp)
			tg := target(t, buildJob(t, new, in, engine.NewCollectSink[readBack]()))

			rep, err := evolve.Check(context.Background(), r, tg, evolve.Options{})
			if err != nil {
				t.Fatal(err)
			}
			it := onlyChange(t, rep)
			if it.Verdict != c.verdict || !strings.Contains(it.Reason, c.reason) {
				t.Fatalf("check: %s %s: %v: %s; want %v with %q", it.What, it.Name, it.Verdict, it.Reason, c.verdict, c.reason)
			}
			if (it.Unreadable != nil) != c.expectUnreadable {
				t.Fatalf("check: unreadable value %v", it.Unreadable)
			}
			if it.Unreadable != nil && !strings.Contains(it.Reason, "key "+it.Unreadable.Key+":") {
				t.Fatalf("check: the reason %q does not name the key %s that has the value", it.Reason, it.Unreadable.Key)
			}
			if it.DataDependent != c.dataDependent {
				t.Fatalf("check: data dependent %v", it.DataDependent)
			}
			if rep.Restorable != (c.verdict != compat.Incompatible) {
				t.Fatalf("check: restorable %v", rep.Restorable)
			}

			got, engineErr := restoreAndRead(t, new, in, backend, sp)
			_, migrateErr := evolve.Migrate(context.Background(), r, sp, tg, evolve.MigrateOptions{HasNow: true, Now: r.Metadata().CreatedAt},
				rewrite.Options{Out: migrated})

			if c.verdict == compat.Incompatible {
				reason, _, _ := strings.Cut(it.Reason, " (first at ")
				if engineErr == nil || !strings.Contains(engineErr.Error(), reason) {
					t.Fatalf("check says incompatible (%s), the engine restores: %v", reason, engineErr)
				}
				if c.dataDependent != errors.Is(engineErr, serializers.ErrUnreadable) {
					t.Fatalf("engine: %v", engineErr)
				}
				if !errors.Is(migrateErr, compat.ErrIncompatible) {
					t.Fatalf("migrate: %v, want a refusal", migrateErr)
				}
				if _, err := os.Stat(migrated); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("migrate refused, yet wrote %s: %v", migrated, err)
				}
				return
			}
			if engineErr != nil {
				t.Fatalf("check says %v, the engine refuses: %v", c.verdict, engineErr)
			}
			want := c.expected(t, old, new, in)
			compareReads(t, "restored from the old savepoint", got, want)
			if migrateErr != nil {
				t.Fatalf("migrate: %v", migrateErr)
			}
			mr := openSavepoint(t, migrated)
			if err := sptest.Verify(mr); err != nil {
				t.Fatal(err)
			}
			again, err := evolve.Check(context.Background(), mr, tg, evolve.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range again.Items {
				if it.Verdict != compat.AsIs {
					t.Fatalf("the migrated savepoint: %s %s %s: %v: %s", it.Operator, it.What, it.Name, it.Verdict, it.Reason)
				}
			}
			fromMigrated, err := restoreAndRead(t, new, in, backend, migrated)
			if err != nil {
				t.Fatal(err)
			}
			compareReads(t, "restored from the migrated savepoint", fromMigrated, want)
		})
	}
}

// onlyChange returns the one item of a report that is not as is: each case
// changes one thing.
func onlyChange(t testing.TB, rep *evolve.Report) evolve.Item {
	t.Helper()
	var changed []evolve.Item
	for _, it := range rep.Items {
		if it.Verdict != compat.AsIs {
			changed = append(changed, it)
		}
	}
	if len(changed) == 0 {
		t.Fatalf("no change found: %+v", rep.Items)
	}
	// The three states change alike; the key changes the operator only.
	for _, it := range changed[1:] {
		if it.Verdict != changed[0].Verdict || (it.What == compat.KeyedState) != (changed[0].What == compat.KeyedState) {
			t.Fatalf("changes differ: %+v", changed)
		}
	}
	return changed[0]
}

func compareReads(t testing.TB, what string, got, want map[string]readBack) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d keys read, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		if g := got[k]; !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: key %s:\n got  %#v\n want %#v", what, k, g, w)
		}
	}
}
