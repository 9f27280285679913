package serializers

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/hamba/avro/v2"
)

// fuzzSnapshots are the serializers FuzzDecode attacks, chosen by the first
// fuzz argument.
func fuzzSnapshots() []Snapshot {
	ttl := func(s Snapshot) Snapshot { return Snapshot{Kind: KindTTL, Args: []Snapshot{s}} }
	return []Snapshot{
		Int64().Snapshot(),
		String().Snapshot(),
		List(Int64()).Snapshot(),
		Map(String(), Int32()).Snapshot(),
		Nullable(Nullable(Int64())).Snapshot(),
		Timer(String(), Window()).Snapshot(),
		{Kind: KindMap, Args: []Snapshot{{Kind: KindBytes}, List(String()).Snapshot()}},
		ttl(avroSnap(openRequestSchema)),
		avroSnap(sessionSchema),
		avroSnap(nodeSchema),
		avroSnap(baseRecord), // enums, unions, logical types, decimals, nested records
		{Kind: KindList, Args: []Snapshot{avroSnap(`["null",{"type":"fixed","name":"F","size":3},{"type":"array","items":"null"}]`)}},
	}
}

func FuzzDecode(f *testing.F) {
	snaps := fuzzSnapshots()
	sers := make([]Serializer, len(snaps))
	for i, s := range snaps {
		sers[i] = must[Serializer](f)(Restore(s))
	}
	for _, c := range hostileCases(f) {
		for i, s := range sers {
			if s.Snapshot().Equal(c.s.Snapshot()) {
				f.Add(uint8(i), c.good)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i, s := range snaps {
		var schema avro.Schema
		switch {
		case s.Kind == KindAvro:
			schema = must[avro.Schema](f)(avro.ParseWithCache(s.Schema, "", &avro.SchemaCache{}))
		case s.Kind == KindTTL && s.Args[0].Kind == KindAvro:
			schema = must[avro.Schema](f)(avro.ParseWithCache(s.Args[0].Schema, "", &avro.SchemaCache{}))
		default:
			continue
		}
		for range 5 {
			datum := randomDatum(rng, nil, schema, 0)
			if s.Kind == KindTTL {
				datum = append([]byte{0, 0, 1, 0x8b, 0, 0, 0, 0}, datum...)
			}
			f.Add(uint8(i), datum)
		}
	}
	f.Add(uint8(2), []byte{0x02, 0x08, 0, 0, 0, 0, 0, 0, 0, 1, 0x08, 0, 0, 0, 0, 0, 0, 0, 2})
	f.Add(uint8(11), []byte{0x02, 0x05, 0x04, 0x0a, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		checkDecode(t, sers[int(which)%len(sers)], data)
	})
}

// FuzzMigrate attacks the Avro rewrite with the paths validation does not
// take: promotions, defaults, reordered and dropped fields, enum and union
// remapping.
func FuzzMigrate(f *testing.F) {
	old := avroSnap(baseRecord)
	newSchema := record(
		`{"name":"extra","type":{"type":"map","values":"string"},"default":{"b":"x","a":"y"}}`,
		`{"name":"tier","type":{"type":"enum","name":"Tier","symbols":["PRO","GOLD"],"default":"GOLD"}}`,
		`{"name":"prompt_tokens","type":"double"}`,
		`{"name":"request_id","type":["null","bytes"]}`,
		`{"name":"note","type":["null","long","string"],"default":null}`,
		fTS, fPrice,
		`{"name":"events","type":{"type":"array","items":{"type":"record","name":"Event","fields":[{"name":"at","type":"float"},{"name":"k","type":"int","default":7}]}}}`,
	)
	m := must[Migrate](f)(Migrator(old, avroSnap(newSchema), MigrateOptions{}))
	reader := must[Of[any]](f)(AvroGeneric(newSchema))
	w := must[avro.Schema](f)(avro.ParseWithCache(baseRecord, "", &avro.SchemaCache{}))
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10 {
		f.Add(randomDatum(rng, nil, w, 0))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := m(nil, src)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("migrate %x: %v, not an ErrDecode", src, err)
			}
			return
		}
		if _, err := reader.Decode(out); err != nil {
			t.Fatalf("migrated %x to %x, which does not decode: %v", src, out, err)
		}
	})
}

// FuzzAvroSchema attacks what a savepoint's metadata hands the toolkit: an
// Avro schema of any shape, with a datum. Restoring, checking against
// itself and against a fixed other schema, migrating and decoding never
// panic, and every error is of its kind.
func FuzzAvroSchema(f *testing.F) {
	for _, c := range avroCompatCases() {
		f.Add(c.old.Schema, []byte{0x02, 0x04, 0x61, 0x62, 0x00})
		f.Add(c.new.Schema, []byte{0x00})
	}
	for _, s := range []string{sessionSchema, nodeSchema, openRequestSchema, `[]`, `"null"`, `{"type":"fixed","name":"F","size":1048577}`,
		`{"type":"array","items":{"type":"array","items":{"type":"array","items":"null"}}}`,
		`{"type":"record","name":"R","fields":[{"name":"a","type":["null","R"]},{"name":"b","type":{"type":"map","values":"R"}}]}`} {
		f.Add(s, []byte{0x02, 0x02, 0x02, 0x00, 0x00, 0x00})
	}
	other := avroSnap(baseRecord)
	f.Fuzz(func(t *testing.T, schema string, data []byte) {
		snap := avroSnap(schema)
		s, err := Restore(snap)
		if err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("Restore: %v is not an ErrSnapshot", err)
			}
			if c := Check(snap, snap); c.Verdict != Incompatible {
				t.Fatalf("Check of a schema that does not restore: %s", c)
			}
			return
		}
		if c := Check(snap, snap); c.Verdict != CompatibleAsIs {
			t.Fatalf("Check against itself: %s", c)
		}
		for _, pair := range [][2]Snapshot{{snap, other}, {other, snap}} {
			c := Check(pair[0], pair[1])
			if c.Verdict == Incompatible {
				continue
			}
			m, err := Migrator(pair[0], pair[1], MigrateOptions{})
			if err != nil {
				t.Fatalf("Migrator of a pair Check finds %s: %v", c, err)
			}
			if _, err := m(nil, data); err != nil && !errors.Is(err, ErrDecode) && !errors.Is(err, ErrUnreadable) {
				t.Fatalf("migrate: %v", err)
			}
		}
		checkDecode(t, s, data)
	})
}
