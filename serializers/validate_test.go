package serializers

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/hamba/avro/v2"
)

// sameVerdict fails unless Validator(s) and DecodeAny agree on src: both
// accept it, or both refuse it with the same message. It returns whether
// src was accepted.
func sameVerdict(t *testing.T, s Serializer, src []byte) bool {
	t.Helper()
	_, decErr := s.DecodeAny(src)
	valErr := Validator(s)(src)
	switch {
	case decErr == nil && valErr == nil:
		return true
	case decErr == nil:
		t.Fatalf("%s: Decode(%x) succeeds, Validate fails: %v", s.Snapshot(), src, valErr)
	case valErr == nil:
		t.Fatalf("%s: Decode(%x) fails (%v), Validate accepts it", s.Snapshot(), src, decErr)
	case decErr.Error() != valErr.Error():
		t.Fatalf("%s: on %x Decode says %q, Validate %q", s.Snapshot(), src, decErr, valErr)
	}
	return false
}

// validateSchemas are Avro schemas of every kind of type, nested, beyond
// those of fuzzSnapshots.
var validateSchemas = []string{
	`{"type":"record","name":"Outer","fields":[
		{"name":"tags","type":{"type":"array","items":"string"}},
		{"name":"counts","type":{"type":"map","values":{"type":"array","items":"long"}}},
		{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B","C"]}},
		{"name":"id","type":{"type":"fixed","name":"Id","size":4}},
		{"name":"inner","type":["null",{"type":"record","name":"Inner","fields":[
			{"name":"b","type":"boolean"},{"name":"f","type":"float"},{"name":"d","type":"double"},
			{"name":"raw","type":"bytes"},{"name":"n","type":"int"}]}]},
		{"name":"any","type":["null","long","string",{"type":"map","values":"Inner"}]}]}`,
	`{"type":"array","items":{"type":"map","values":["null",{"type":"enum","name":"Kind2","symbols":["X","Y"]},"string"]}}`,
	`{"type":"map","values":{"type":"fixed","name":"Dec","size":3,"logicalType":"decimal","precision":7,"scale":2}}`,
}

// validateCases are serializers whose values Validate checks: the restored
// and typed ones of the hostile corpus with a good value each, and the
// fuzz targets' snapshots, each with random valid data where it has an
// Avro schema.
func validateCases(t *testing.T) (sers []Serializer, goods [][][]byte) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range hostileCases(t) {
		sers, goods = append(sers, c.s), append(goods, [][]byte{c.good})
	}
	for _, c := range restoreCases(t) {
		good := must[[]byte](t)(c.typed.AppendAny(nil, c.value))
		sers, goods = append(sers, c.typed), append(goods, [][]byte{good})
	}
	snaps := fuzzSnapshots()
	for _, s := range validateSchemas {
		snaps = append(snaps, avroSnap(s), Snapshot{Kind: KindTTL, Args: []Snapshot{avroSnap(s)}})
	}
	for _, snap := range snaps {
		s := must[Serializer](t)(Restore(snap))
		var data [][]byte
		prefix := []byte(nil)
		schemaJSON := snap.Schema
		if snap.Kind == KindTTL && snap.Args[0].Kind == KindAvro {
			prefix, schemaJSON = []byte{0, 0, 1, 0x8b, 0, 0, 0, 0}, snap.Args[0].Schema
		}
		if schemaJSON != "" {
			schema := must[avro.Schema](t)(avro.ParseWithCache(schemaJSON, "", &avro.SchemaCache{}))
			for range 40 {
				data = append(data, randomDatum(rng, bytes.Clone(prefix), schema, 0))
			}
		}
		sers, goods = append(sers, s), append(goods, data)
	}
	return sers, goods
}

// TestValidateAgreesWithDecode is the differential test of Validator: over
// good values, their truncations, a trailing byte, random bytes and good
// values with a few bytes changed, it accepts exactly what DecodeAny
// accepts and refuses the rest with DecodeAny's error.
func TestValidateAgreesWithDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	sers, goods := validateCases(t)
	var accepted, refused int
	tally := func(ok bool) {
		if ok {
			accepted++
		} else {
			refused++
		}
	}
	for i, s := range sers {
		for _, good := range goods[i] {
			if !sameVerdict(t, s, good) {
				t.Fatalf("%s: good value %x does not decode", s.Snapshot(), good)
			}
			for n := range len(good) {
				tally(sameVerdict(t, s, good[:n]))
			}
			tally(sameVerdict(t, s, append(bytes.Clone(good), 0)))
			for range 200 {
				src := bytes.Clone(good)
				for range 1 + rng.IntN(3) {
					if len(src) > 0 {
						src[rng.IntN(len(src))] = byte(rng.Uint32())
					}
				}
				tally(sameVerdict(t, s, src))
			}
		}
		for range 500 {
			src := make([]byte, rng.IntN(48))
			for j := range src {
				src[j] = byte(rng.Uint32())
			}
			tally(sameVerdict(t, s, src))
		}
	}
	// Both verdicts must be common, or the comparison proves little.
	if accepted < 5000 || refused < 20000 {
		t.Errorf("%d inputs accepted, %d refused: too few of one kind", accepted, refused)
	}
	t.Logf("%d serializers: %d inputs accepted, %d refused, with the same verdict and error", len(sers), accepted, refused)
}

// TestValidateAllocatesNothing: verify --deep validates every stored value;
// for the restored serializers of the toolkit's own kinds, that is free of
// garbage.
func TestValidateAllocatesNothing(t *testing.T) {
	for _, c := range restoreCases(t) {
		if c.typed.Snapshot().Kind == KindAvro || c.name == "ttl avro" || c.name == "map of avro" {
			continue
		}
		s := must[Serializer](t)(Restore(c.typed.Snapshot()))
		good := must[[]byte](t)(c.typed.AppendAny(nil, c.value))
		validate := Validator(s)
		if n := testing.AllocsPerRun(100, func() {
			if err := validate(good); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: Validate allocates %.0f times a value", c.name, n)
		}
	}
}

// FuzzValidate attacks the differential property of Validator with the inputs of
// FuzzDecode.
func FuzzValidate(f *testing.F) {
	snaps := fuzzSnapshots()
	for _, s := range validateSchemas {
		snaps = append(snaps, avroSnap(s))
	}
	sers := make([]Serializer, len(snaps))
	for i, s := range snaps {
		sers[i] = must[Serializer](f)(Restore(s))
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for i, s := range snaps {
		if s.Kind == KindTTL {
			s = s.Args[0]
		}
		if s.Kind != KindAvro {
			f.Add(uint8(i), []byte{0x02, 0x01, 0x61, 0x00})
			continue
		}
		schema := must[avro.Schema](f)(avro.ParseWithCache(s.Schema, "", &avro.SchemaCache{}))
		for range 5 {
			datum := randomDatum(rng, nil, schema, 0)
			if snaps[i].Kind == KindTTL {
				datum = append([]byte{0, 0, 1, 0x8b, 0, 0, 0, 0}, datum...)
			}
			f.Add(uint8(i), datum)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		sameVerdict(t, sers[int(which)%len(sers)], data)
	})
}

// BenchmarkRestored compares decoding a stored value with validating it,
// as verify --deep did and does, for a string, a map of strings to longs,
// and a map-heavy Avro record.
func BenchmarkRestored(b *testing.B) {
	m := Map(String(), Int64())
	sess := must[Of[Session]](b)(Avro[Session](sessionSchema))
	for _, c := range []struct {
		name string
		snap Snapshot
		src  []byte
	}{
		{"string", String().Snapshot(), []byte("u-10283")},
		{"map", m.Snapshot(), must[[]byte](b)(m.Append(nil, map[string]int64{"cat-007": 1, "cat-012": 3, "cat-017": 250}))},
		{"avro", sess.Snapshot(), must[[]byte](b)(sess.Append(nil, sampleSession()))},
	} {
		s := must[Serializer](b)(Restore(c.snap))
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := s.DecodeAny(c.src); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/validate", func(b *testing.B) {
			validate := Validator(s)
			b.ReportAllocs()
			for range b.N {
				if err := validate(c.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
