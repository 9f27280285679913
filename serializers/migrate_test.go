package serializers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
)

func migrate(t *testing.T, old, new Snapshot, opts MigrateOptions, src []byte) []byte {
	t.Helper()
	m, err := Migrator(old, new, opts)
	if err != nil {
		t.Fatalf("Migrator(%v, %v): %v", old, new, err)
	}
	out, err := m([]byte("pre"), src)
	if err != nil {
		t.Fatalf("migrate %x: %v", src, err)
	}
	if !bytes.HasPrefix(out, []byte("pre")) {
		t.Fatalf("migrate lost dst: %q", out)
	}
	return out[3:]
}

func TestMigrateAvro(t *testing.T) {
	type v2Request struct {
		RequestID    string `avro:"request_id"`
		TenantID     string `avro:"tenant_id"`
		Model        string `avro:"model"`
		StartedTS    int64  `avro:"started_ts"`
		PromptTokens int64  `avro:"prompt_tokens"`
		Region       string `avro:"region"`
	}
	v2Schema := strings.Replace(openRequestSchema, `{"name": "prompt_tokens", "type": "int"}`,
		`{"name": "prompt_tokens", "type": "long"}, {"name": "region", "type": "string", "default": "eu-west"}`, 1)
	v1 := must[Of[OpenRequest]](t)(Avro[OpenRequest](openRequestSchema))
	v2 := must[Of[v2Request]](t)(Avro[v2Request](v2Schema))
	src := must[[]byte](t)(v1.Append(nil, sampleRequest))

	out := migrate(t, v1.Snapshot(), v2.Snapshot(), MigrateOptions{}, src)
	got := must[v2Request](t)(v2.Decode(out))
	want := v2Request{"r-1093", "tenant-acme", "gpt", 1700000000000, 321, "eu-west"}
	if got != want {
		t.Fatalf("migrated to %+v, want %+v", got, want)
	}
	// Removing the field again, and reading the long back as... a long.
	type v3Request struct {
		RequestID    string `avro:"request_id"`
		PromptTokens int64  `avro:"prompt_tokens"`
	}
	v3Schema := `{"type":"record","name":"OpenRequest","namespace":"com.x","fields":[
		{"name":"prompt_tokens","type":"long"},{"name":"request_id","type":"string"}]}`
	v3 := must[Of[v3Request]](t)(Avro[v3Request](v3Schema))
	out3 := migrate(t, v2.Snapshot(), v3.Snapshot(), MigrateOptions{}, out)
	if got := must[v3Request](t)(v3.Decode(out3)); got != (v3Request{"r-1093", 321}) {
		t.Fatalf("fields removed and reordered: %+v", got)
	}
	if !bytes.Equal(out3, unhex(t, "8205 0c722d31303933")) {
		t.Fatalf("reordered bytes %x", out3)
	}
}

func TestMigratePrimitivePromotions(t *testing.T) {
	for _, c := range []struct {
		old, new, src, want string
	}{
		{`"int"`, `"long"`, "8205", "8205"},
		{`"int"`, `"float"`, "03", "0000 00c0"}, // -2
		{`"int"`, `"double"`, "04", "0000 0000 0000 0040"},
		{`"long"`, `"double"`, "80a0abfef962", spacedHex(binary.LittleEndian.AppendUint64(nil, 0x4278bcfe56800000))},
		{`"float"`, `"double"`, "0000c03f", "000000000000f83f"}, // 1.5
		{`"string"`, `"bytes"`, "0678c3a9", "0678c3a9"},
		{`"bytes"`, `"string"`, "0678c3a9", "0678c3a9"},
		{`["int","long"]`, `"long"`, "00 0a", "0a"}, // int branch 5
		{`["int","long"]`, `"long"`, "02 0a", "0a"},
		{`["int","float"]`, `["null","double"]`, "00 06", "02 0000000000000840"}, // 3 → double 3
		{`"int"`, `["null","long"]`, "06", "02 06"},
		{`{"type":"enum","name":"E","symbols":["A","B","C"]}`, `{"type":"enum","name":"E","symbols":["C","B"],"default":"B"}`, "00", "02"},
		{`{"type":"enum","name":"E","symbols":["A","B","C"]}`, `{"type":"enum","name":"E","symbols":["C","B"],"default":"B"}`, "04", "00"},
	} {
		out := migrate(t, avroSnap(c.old), avroSnap(c.new), MigrateOptions{}, unhex(t, c.src))
		if !bytes.Equal(out, unhex(t, c.want)) {
			t.Errorf("%s → %s of %s: got %x, want %s", c.old, c.new, c.src, out, c.want)
		}
	}
}

// hamba's resolver refuses a writer union whose branches all promote to the
// reader's type, though the specification and its own Compatible allow it.
func TestMigrateUnionBranchPromotion(t *testing.T) {
	w, r := avro.MustParse(`["int","long"]`), avro.MustParse(`"long"`)
	if _, err := avro.NewSchemaCompatibility().Resolve(r, w); err == nil {
		t.Log("hamba resolves this pair now")
	}
	type rec struct {
		N int64 `avro:"n"`
	}
	old := avroSnap(`{"type":"record","name":"R","fields":[{"name":"n","type":["int","long"]}]}`)
	newS := must[Of[rec]](t)(Avro[rec](`{"type":"record","name":"R","fields":[{"name":"n","type":"long"}]}`))
	m := must[Migrate](t)(Migrator(old, newS.Snapshot(), MigrateOptions{}))
	for src, want := range map[string]int64{"00 0a": 5, "02 feffffffffffffffff01": math.MaxInt64, "02 80808080808080808001": 1 << 62, "00 01": -1} {
		out := must[[]byte](t)(m(nil, unhex(t, src)))
		if got := must[rec](t)(newS.Decode(out)); got.N != want {
			t.Errorf("%s → %d, want %d", src, got.N, want)
		}
	}
}

// A narrowed union migrates the values that use a branch the reader still
// has, and refuses with ErrUnreadable those that use a removed one.
func TestMigrateNarrowedUnion(t *testing.T) {
	for _, c := range []struct {
		old, new string
		src      string
		want     string // hex, or empty when the value is unreadable
		reason   string
	}{
		{`["null","string","long"]`, `["null","string"]`, "02 0278", "02 0278", ""},
		{`["null","string","long"]`, `["null","string"]`, "00", "00", ""},
		{`["null","string","long"]`, `["null","string"]`, "04 0a", "", "union narrowed: long matches no branch of the reader union"},
		{`["null","long"]`, `"long"`, "02 0a", "0a", ""},
		{`["null","long"]`, `"long"`, "00", "", "union narrowed to long: writer branch null cannot be read"},
		{`{"type":"array","items":["null","int"]}`, `{"type":"array","items":"long"}`, "04 02 02 02 04 00", "04 02 04 00", ""},
		{`{"type":"array","items":["null","int"]}`, `{"type":"array","items":"long"}`, "04 02 02 00 00", "", "union narrowed to long"},
	} {
		m := must[Migrate](t)(Migrator(avroSnap(c.old), avroSnap(c.new), MigrateOptions{}))
		out, err := m(nil, unhex(t, c.src))
		if c.want != "" {
			if err != nil || !bytes.Equal(out, unhex(t, c.want)) {
				t.Errorf("%s → %s: %x, %v; want %s", c.old, c.new, out, err, c.want)
			}
			continue
		}
		if !errors.Is(err, ErrUnreadable) || errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s → %s of %s: %v; want ErrUnreadable with %q", c.old, c.new, c.src, err, c.reason)
		}
	}
	// A value that is not a datum of the old schema is malformed, not
	// unreadable.
	m := must[Migrate](t)(Migrator(avroSnap(`["null","long"]`), avroSnap(`"long"`), MigrateOptions{}))
	if _, err := m(nil, unhex(t, "06")); !errors.Is(err, ErrDecode) {
		t.Errorf("union index 3: %v", err)
	}
}

func TestMigrateTTL(t *testing.T) {
	opts := MigrateOptions{Now: 1700000000000}
	plain := must[[]byte](t)(String().Append(nil, "v"))
	with := must[[]byte](t)(TTL(String()).Append(nil, TTLValue[string]{LastModified: 5, Value: "v"}))

	on := migrate(t, String().Snapshot(), TTL(String()).Snapshot(), opts, plain)
	if got := must[TTLValue[string]](t)(TTL(String()).Decode(on)); got != (TTLValue[string]{1700000000000, "v"}) {
		t.Fatalf("TTL on: %+v", got)
	}
	if off := migrate(t, TTL(String()).Snapshot(), String().Snapshot(), opts, with); !bytes.Equal(off, plain) {
		t.Fatalf("TTL off: %x", off)
	}
	// TTL on and an Avro migration at once; and a kept timestamp.
	ints := avroSnap(`"int"`)
	longs := avroSnap(`"long"`)
	ttl := func(s Snapshot) Snapshot { return Snapshot{Kind: KindTTL, Args: []Snapshot{s}} }
	if out := migrate(t, ints, ttl(longs), opts, []byte{0x0a}); !bytes.Equal(out, unhex(t, "0000018bcfe56800 0a")) {
		t.Fatalf("TTL on with promotion: %x", out)
	}
	if out := migrate(t, ttl(ints), ttl(longs), opts, unhex(t, "0000000000000007 0a")); !bytes.Equal(out, unhex(t, "0000000000000007 0a")) {
		t.Fatalf("TTL kept: %x", out)
	}
	m := must[Migrate](t)(Migrator(TTL(String()).Snapshot(), String().Snapshot(), opts))
	if _, err := m(nil, []byte{1, 2, 3}); !errors.Is(err, ErrDecode) {
		t.Fatalf("short TTL value: %v", err)
	}
}

func TestMigrateComposites(t *testing.T) {
	ints, longs := avroSnap(`"int"`), avroSnap(`"long"`)
	list := func(e Snapshot) Snapshot { return Snapshot{Kind: KindList, Args: []Snapshot{e}} }
	mapOf := func(k, v Snapshot) Snapshot { return Snapshot{Kind: KindMap, Args: []Snapshot{k, v}} }
	nullable := func(e Snapshot) Snapshot { return Snapshot{Kind: KindNullable, Args: []Snapshot{e}} }
	str := String().Snapshot()

	// A record whose encoding grows past 127 bytes, so the frame length
	// grows a byte.
	bigOld := avroSnap(`{"type":"record","name":"R","fields":[{"name":"s","type":"string"}]}`)
	bigNew := avroSnap(`{"type":"record","name":"R","fields":[{"name":"s","type":"string"},{"name":"pad","type":"string","default":"` + strings.Repeat("p", 130) + `"}]}`)

	for _, c := range []struct {
		name     string
		old, new Snapshot
		src      string
		want     string
	}{
		{"list", list(ints), list(longs), "02 01 0a 01 0b", "02 01 0a 01 0b"},
		{"empty list", list(ints), list(longs), "00", "00"},
		{"map values", mapOf(str, ints), mapOf(str, longs), "02 01 61 01 02 01 62 01 04", "02 01 61 01 02 01 62 01 04"},
		{"empty map", mapOf(str, ints), mapOf(str, longs), "00", "00"},
		{"nullable null", nullable(ints), nullable(longs), "00", "00"},
		{"nullable", nullable(ints), nullable(longs), "01 0a", "01 0a"},
		{"growing frame", list(bigOld), list(bigNew), "01 02 0278", "01 8601 0278 8402" + strings.Repeat("70", 130)},
	} {
		out := migrate(t, c.old, c.new, MigrateOptions{}, unhex(t, c.src))
		if !bytes.Equal(out, unhex(t, c.want)) {
			t.Errorf("%s: got %x, want %s", c.name, out, c.want)
		}
	}
	m := must[Migrate](t)(Migrator(mapOf(str, ints), mapOf(str, longs), MigrateOptions{}))
	for _, bad := range []string{"02 01 62 01 02 01 61 01 04", "01 01 61 01 ff", "01 01 61 01 0a 00", "05"} {
		if _, err := m(nil, unhex(t, bad)); !errors.Is(err, ErrDecode) {
			t.Errorf("map %s: %v", bad, err)
		}
	}
}

func TestMigratorRefusesIncompatibleAndCopiesAsIs(t *testing.T) {
	if _, err := Migrator(Int64().Snapshot(), String().Snapshot(), MigrateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "serializer changed from int64 to string") {
		t.Fatalf("incompatible: %v", err)
	}
	m := must[Migrate](t)(Migrator(Int64().Snapshot(), Int64().Snapshot(), MigrateOptions{}))
	if out := must[[]byte](t)(m([]byte{9}, []byte{1, 2})); !bytes.Equal(out, []byte{9, 1, 2}) {
		t.Fatalf("as is: %x", out)
	}
}

// For every Avro pair Check calls compatible after migration, the migration
// of random writer data matches hamba's decode with the resolved schema and
// encode with the reader's, except where hamba cannot serve as the oracle.
func TestMigrateMatchesHambaResolver(t *testing.T) {
	hambaCannot := map[string]string{
		"union branches promote":            "Resolve refuses: union type must be unique",
		"union branches promote into union": "Resolve refuses: union type must be unique",
		"recursive schema evolved":          "Resolve recurses until the stack overflows",
		"union widened":                     "a resolved generic union decodes without its branch name, which the encoder refuses",
		"value into union":                  "a resolved generic union decodes without its branch name, which the encoder refuses",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	compared := 0
	for _, c := range avroCompatCases() {
		if c.verdict != CompatibleAfterMigration || hambaCannot[c.name] != "" || dataDependent[c.name] {
			continue
		}
		w := must[avro.Schema](t)(avro.ParseWithCache(c.old.Schema, "", &avro.SchemaCache{}))
		r := must[avro.Schema](t)(avro.ParseWithCache(c.new.Schema, "", &avro.SchemaCache{}))
		resolved, err := avro.NewSchemaCompatibility().Resolve(r, w)
		if err != nil {
			t.Errorf("%s: hamba cannot resolve: %v", c.name, err)
			continue
		}
		m := must[Migrate](t)(Migrator(c.old, c.new, MigrateOptions{}))
		reader := must[Of[any]](t)(AvroGeneric(c.new.Schema))
		for range 20 {
			src := randomDatum(rng, nil, w, 0)
			ours, err := m(nil, src)
			if err != nil {
				t.Fatalf("%s: migrate %x: %v", c.name, src, err)
			}
			var v any
			if err := avroAPI.Unmarshal(resolved, src, &v); err != nil {
				t.Fatalf("%s: hamba decode of %x: %v", c.name, src, err)
			}
			want, err := reader.Append(nil, v)
			if err != nil {
				t.Fatalf("%s: encoding hamba's %#v: %v", c.name, v, err)
			}
			if !bytes.Equal(ours, want) {
				got, _ := reader.Decode(ours)
				t.Fatalf("%s: from %x\n ours  %x %#v\n hamba %x %#v", c.name, src, ours, got, want, v)
			}
			if back, err := reader.Decode(ours); err != nil || !reflect.DeepEqual(back, v) {
				t.Fatalf("%s: ours decodes to %#v, %v; hamba's value %#v", c.name, back, err, v)
			}
		}
		compared++
	}
	if compared < 20 {
		t.Fatalf("only %d pairs compared", compared)
	}
}

// A reader enum that lacks a writer symbol and has no default reads every
// value but those of that symbol, as a union that lost a branch does.
func TestMigrateEnumSymbolRemoved(t *testing.T) {
	old := avroSnap(`{"type":"record","name":"R","fields":[{"name":"tier","type":{"type":"enum","name":"Tier","symbols":["FREE","PRO","GOLD"]}}]}`)
	new := avroSnap(`{"type":"record","name":"R","fields":[{"name":"tier","type":{"type":"enum","name":"Tier","symbols":["GOLD","FREE"]}}]}`)
	if c := Check(old, new); c.Verdict != CompatibleAfterMigration || !c.DataDependent {
		t.Fatalf("Check = %+v", c)
	}
	m := must[Migrate](t)(Migrator(old, new, MigrateOptions{}))
	for src, want := range map[byte]byte{0: 2, 4: 0} { // FREE → 1, GOLD → 0
		if out, err := m(nil, []byte{src}); err != nil || !bytes.Equal(out, []byte{want}) {
			t.Errorf("migrate %02x: %x, %v; want %02x", src, out, err, want)
		}
	}
	_, err := m(nil, []byte{2})
	if !errors.Is(err, ErrUnreadable) || !strings.HasSuffix(err.Error(), "R.tier: enum symbol PRO is not in the new schema") {
		t.Fatalf("migrate of PRO: %v", err)
	}
}

// The empty union has no values: a serializer for it restores, refuses
// every datum, and any schema reads what it wrote.
func TestEmptyUnion(t *testing.T) {
	s := must[Serializer](t)(Restore(avroSnap(`[]`)))
	for _, src := range [][]byte{nil, {0}, {2}} {
		if _, err := s.DecodeAny(src); !errors.Is(err, ErrDecode) {
			t.Errorf("Decode(%x) = %v", src, err)
		}
	}
	if _, err := s.AppendAny(nil, nil); !errors.Is(err, ErrEncode) {
		t.Errorf("AppendAny(nil) = %v", err)
	}
	if _, err := Avro[any](`[]`); err == nil || !strings.Contains(err.Error(), "no finite value") {
		t.Errorf("Avro[any]([]) = %v", err)
	}
	for _, reader := range []string{`[]`, `"string"`, `["null","int"]`} {
		if c := Check(avroSnap(`[]`), avroSnap(reader)); c.Verdict != CompatibleAsIs {
			t.Errorf("[] read as %s: %s", reader, c)
		}
	}
}

// Defaults are written as the schema's JSON says, exactly: hamba reads
// numbers through float64, which rounds a long past 2^53 and turns
// Long.MAX_VALUE, a common "never" default, into Long.MIN_VALUE.
func TestMigrateExactDefaults(t *testing.T) {
	old := avroSnap(`{"type":"record","name":"R","namespace":"com.x","fields":[{"name":"a","type":"int"}]}`)
	newS := avroSnap(`{"type":"record","name":"R","namespace":"com.x","fields":[{"name":"a","type":"int"},
		{"name":"big","type":"long","default":9007199254740993},
		{"name":"max","type":"long","default":9223372036854775807},
		{"name":"min","type":"long","default":-9223372036854775808},
		{"name":"i","type":"int","default":-2147483648},
		{"name":"f","type":"float","default":0.1},
		{"name":"d","type":"double","default":1e-300},
		{"name":"b","type":"bytes","default":"\u00ff\u0000A"},
		{"name":"opt","type":["long","null"],"default":9223372036854775806},
		{"name":"nested","type":{"type":"record","name":"N","fields":[
			{"name":"x","type":"long","default":9007199254740995},
			{"name":"y","type":"long"}]},"default":{"y":-9007199254740993}},
		{"name":"xs","type":{"type":"array","items":"long"},"default":[9007199254740993]}]}`)
	out := migrate(t, old, newS, MigrateOptions{}, unhex(t, "02"))
	want := appendLong(nil, 1)
	for _, v := range []int64{9007199254740993, math.MaxInt64, math.MinInt64, math.MinInt32} {
		want = appendLong(want, v)
	}
	want = binary.LittleEndian.AppendUint32(want, math.Float32bits(0.1))
	want = binary.LittleEndian.AppendUint64(want, math.Float64bits(1e-300))
	want = append(appendLong(want, 3), 0xff, 0, 'A')
	want = appendLong(append(want, 0), math.MaxInt64-1)
	want = appendLong(appendLong(want, 9007199254740995), -9007199254740993)
	want = append(appendLong(appendLong(want, 1), 9007199254740993), 0)
	if !bytes.Equal(out, want) {
		t.Fatalf("defaults written as %x, want %x", out, want)
	}
}

// An int or long default that is not a JSON integer in range does not
// parse, as the specification's table of defaults and Java's parser say;
// hamba would truncate 1.9 to 1.
func TestMigrateRefusesNonIntegerDefaults(t *testing.T) {
	old := avroSnap(`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`)
	for def, want := range map[string]string{
		`{"name":"i","type":"int","default":1.9}`:                                                                    "field R.i: default 1.9 is not an int",
		`{"name":"i","type":"int","default":1e3}`:                                                                    "field R.i: default 1e3 is not an int",
		`{"name":"i","type":"int","default":2147483648}`:                                                             "field R.i: default 2147483648 is not an int",
		`{"name":"l","type":"long","default":9223372036854775808}`:                                                   "field R.l: default 9223372036854775808 is not a long",
		`{"name":"t","type":{"type":"long","logicalType":"timestamp-millis"},"default":1.5}`:                         "field R.t: default 1.5 is not a long",
		`{"name":"n","type":{"type":"record","name":"N","fields":[{"name":"x","type":"long"}]},"default":{"x":0.5}}`: "field N.x: default 0.5 is not a long",
	} {
		newS := avroSnap(`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},` + def + `]}`)
		if c := Check(old, newS); c.Verdict != Incompatible || !strings.Contains(c.Reason, want) {
			t.Errorf("%s: %v %q, want incompatible with %q", def, c.Verdict, c.Reason, want)
		}
		if _, err := Migrator(old, newS, MigrateOptions{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Migrator: %v, want %q", def, err, want)
		}
	}
}

// A migration whose output the reader's bounds would refuse fails the
// values past them as unreadable, not as corrupt, and a check says that
// the verdict depends on the data: items that take no bytes after the
// migration, and a recursive type wrapped in a union, one level deeper at
// each recursion.
func TestMigrateWithinTheReadersBounds(t *testing.T) {
	nulls := func(n int) []byte { // n items of branch 0, null
		return append(append(appendLong(nil, int64(n)), make([]byte, n)...), 0)
	}
	records := func(n int) []byte { // n records {x: 1}
		return append(append(appendLong(nil, int64(n)), bytes.Repeat([]byte{2}, n)...), 0)
	}
	// chain is a Node{v, kids} chain levels deep.
	var chain func(levels int) []byte
	chain = func(levels int) []byte {
		if levels == 1 {
			return []byte{2, 0}
		}
		return append(append([]byte{2, 2}, chain(levels-1)...), 0)
	}
	node := `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"kids","type":{"type":"array","items":%s}}]}`
	for _, c := range []struct {
		name, old, new, reason string
		fits, past             []byte
		unreadable             string
	}{
		{"nulls", `{"type":"array","items":["null","int"]}`, `{"type":"array","items":"null"}`,
			"[]: items take no bytes in the new schema", nulls(avrobin.MaxZeroWidthItems), nulls(avrobin.MaxZeroWidthItems + 1),
			"more than 65536 array items that take no bytes in the new schema"},
		{"empty records", `{"type":"array","items":{"type":"record","name":"R","fields":[{"name":"x","type":"int"}]}}`,
			`{"type":"array","items":{"type":"record","name":"R","fields":[]}}`,
			"[]: items take no bytes in the new schema", records(1000), records(70000),
			"more than 65536 array items that take no bytes in the new schema"},
		{"recursion wrapped", fmt.Sprintf(node, `"Node"`), fmt.Sprintf(node, `["null","Node"]`),
			"values nest deeper in the new schema", chain(300), chain(400),
			"would nest deeper than 1000 levels in the new schema"},
	} {
		t.Run(c.name, func(t *testing.T) {
			old, newS := avroSnap(c.old), avroSnap(c.new)
			got := Check(old, newS)
			if got.Verdict != CompatibleAfterMigration || !got.DataDependent || !strings.Contains(got.Reason, c.reason) {
				t.Fatalf("Check = %v, data dependent %v, %q; want after migration, data dependent, %q", got.Verdict, got.DataDependent, got.Reason, c.reason)
			}
			m := must[Migrate](t)(Migrator(old, newS, MigrateOptions{}))
			out, err := m(nil, c.fits)
			if err != nil {
				t.Fatalf("a value within the bounds: %v", err)
			}
			if err := Validator(must[Serializer](t)(Restore(newS)))(out); err != nil {
				t.Fatalf("its migration does not read back: %v", err)
			}
			_, err = m(nil, c.past)
			if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), c.unreadable) {
				t.Fatalf("a value past the bounds: %v, want unreadable: %q", err, c.unreadable)
			}
			if len(err.Error()) > 300 {
				t.Fatalf("a %d-byte message: %.300s…", len(err.Error()), err)
			}
		})
	}
}
