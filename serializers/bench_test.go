package serializers

import (
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
)

func BenchmarkInt64Append(b *testing.B) {
	s := Int64()
	buf := make([]byte, 0, 8)
	b.ReportAllocs()
	for i := range b.N {
		buf, _ = s.Append(buf[:0], int64(i))
	}
}

func BenchmarkInt64Decode(b *testing.B) {
	s := Int64()
	src := must[[]byte](b)(s.Append(nil, 1700000000000))
	b.ReportAllocs()
	for range b.N {
		if _, err := s.Decode(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAvroTypedEncode(b *testing.B) {
	s := must[Of[OpenRequest]](b)(Avro[OpenRequest](openRequestSchema))
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for range b.N {
		buf, _ = s.Append(buf[:0], sampleRequest)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkAvroTypedDecode(b *testing.B) {
	s := must[Of[OpenRequest]](b)(Avro[OpenRequest](openRequestSchema))
	src := must[[]byte](b)(s.Append(nil, sampleRequest))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for range b.N {
		if _, err := s.Decode(src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAvroSessionEncode pays for sorting the maps of a map-heavy
// record; BenchmarkHambaSessionEncode is hamba alone, unsorted.
func BenchmarkAvroSessionEncode(b *testing.B) {
	s := must[Of[Session]](b)(Avro[Session](sessionSchema))
	v := sampleSession()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for range b.N {
		buf, _ = s.Append(buf[:0], v)
	}
}

func BenchmarkHambaSessionEncode(b *testing.B) {
	schema := avro.MustParse(sessionSchema)
	v := sampleSession()
	b.ReportAllocs()
	for range b.N {
		if _, err := avroAPI.Marshal(schema, v); err != nil {
			b.Fatal(err)
		}
	}
}

var (
	benchV1 = openRequestSchema
	benchV2 = strings.Replace(openRequestSchema, `{"name": "prompt_tokens", "type": "int"}`,
		`{"name": "prompt_tokens", "type": "long"}, {"name": "region", "type": "string", "default": "eu-west"}`, 1)
)

// BenchmarkAvroMigrate rewrites OpenRequest v1 bytes as v2 (int to long, a
// field added); BenchmarkHambaMigrate is the same with hamba's resolver:
// decode with the resolved schema, encode with v2.
func BenchmarkAvroMigrate(b *testing.B) {
	m := must[Migrate](b)(Migrator(avroSnap(benchV1), avroSnap(benchV2), MigrateOptions{}))
	src := must[[]byte](b)(must[Of[OpenRequest]](b)(Avro[OpenRequest](benchV1)).Append(nil, sampleRequest))
	buf := make([]byte, 0, 64)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for range b.N {
		var err error
		if buf, err = m(buf[:0], src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHambaMigrate(b *testing.B) {
	w, r := avro.MustParse(benchV1), avro.MustParse(benchV2)
	resolved := must[avro.Schema](b)(avro.NewSchemaCompatibility().Resolve(r, w))
	src := must[[]byte](b)(must[Of[OpenRequest]](b)(Avro[OpenRequest](benchV1)).Append(nil, sampleRequest))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for range b.N {
		var v map[string]any
		if err := avroAPI.Unmarshal(resolved, src, &v); err != nil {
			b.Fatal(err)
		}
		if _, err := avroAPI.Marshal(r, v); err != nil {
			b.Fatal(err)
		}
	}
}
