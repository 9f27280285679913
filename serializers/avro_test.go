package serializers

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
)

func TestAvroTypedRoundTrips(t *testing.T) {
	req := must[Of[OpenRequest]](t)(Avro[OpenRequest](openRequestSchema))
	roundTrip(t, req, sampleRequest, deepEqual)
	roundTrip(t, req, OpenRequest{}, deepEqual)

	sess := must[Of[Session]](t)(Avro[Session](sessionSchema))
	roundTrip(t, sess, sampleSession(), deepEqual)
	roundTrip(t, sess, Session{Counts: map[string]int64{}, Tags: []string{}, Nested: map[string]map[string]int32{}}, deepEqual)

	type Node struct {
		Value int64 `avro:"value"`
		Next  *Node `avro:"next"`
	}
	node := must[Of[Node]](t)(Avro[Node](nodeSchema))
	roundTrip(t, node, Node{1, &Node{2, &Node{3, nil}}}, deepEqual)
}

// Restore(x.Snapshot()) reads and writes the same bytes as x, so the toolkit
// can rewrite a job's Avro state without the job's structs.
func TestAvroTypedAndGenericAgree(t *testing.T) {
	sess := must[Of[Session]](t)(Avro[Session](sessionSchema))
	generic := must[Serializer](t)(Restore(sess.Snapshot()))
	typed := must[[]byte](t)(sess.Append(nil, sampleSession()))
	v := must[any](t)(generic.DecodeAny(typed))
	again := must[[]byte](t)(generic.AppendAny(nil, v))
	if !bytes.Equal(typed, again) {
		t.Fatalf("generic re-encoding differs:\n%x\n%x", typed, again)
	}
	counts := v.(map[string]any)["counts"].(map[string]any)
	if counts["garden"] != int64(42) {
		t.Fatalf("generic counts = %v", counts)
	}
}

func TestAvroMapsAreDeterministic(t *testing.T) {
	sess := must[Of[Session]](t)(Avro[Session](sessionSchema))
	generic := must[Serializer](t)(Restore(sess.Snapshot()))
	want := must[[]byte](t)(sess.Append(nil, sampleSession()))
	genericValue := must[any](t)(generic.DecodeAny(want))
	for i := range 50 {
		// A fresh map each time, so Go's iteration order differs too.
		if got := must[[]byte](t)(sess.Append(nil, sampleSession())); !bytes.Equal(got, want) {
			t.Fatalf("typed encoding %d differs:\n%x\n%x", i, got, want)
		}
		if got := must[[]byte](t)(generic.AppendAny(nil, genericValue)); !bytes.Equal(got, want) {
			t.Fatalf("generic encoding %d differs", i)
		}
	}
	// The counts map's keys appear in sorted order in the bytes.
	last := -1
	for _, k := range strings.Fields("art books drinks films food games garden music sport tools toys travel") {
		at := bytes.Index(want, []byte(k))
		if at <= last {
			t.Fatalf("key %q at %d, not after %d", k, at, last)
		}
		last = at
	}
}

func TestAvroCheckTypeAgainstSchema(t *testing.T) {
	type missingField struct {
		RequestID string `avro:"request_id"`
	}
	if _, err := Avro[missingField](openRequestSchema); err == nil || !strings.Contains(err.Error(), "cannot be encoded") {
		t.Errorf("struct without the schema's fields: %v", err)
	}
	type wrongType struct {
		RequestID    int64  `avro:"request_id"`
		TenantID     string `avro:"tenant_id"`
		Model        string `avro:"model"`
		StartedTS    int64  `avro:"started_ts"`
		PromptTokens int32  `avro:"prompt_tokens"`
	}
	if _, err := Avro[wrongType](openRequestSchema); err == nil || !strings.Contains(err.Error(), "cannot hold") {
		t.Errorf("struct with a wrong field type: %v", err)
	}
	for _, schema := range []string{`not json`, `{"type":"record","name":"R"}`, `{"type":"nope"}`, `"string"x`} {
		if _, err := AvroGeneric(schema); err == nil {
			t.Errorf("AvroGeneric(%s) accepted", schema)
		}
	}
}

// Every valid block form decodes; re-encoding writes the canonical one.
func TestAvroAcceptsEveryBlockForm(t *testing.T) {
	longs := must[Of[any]](t)(AvroGeneric(`{"type":"array","items":"long"}`))
	canonical := unhex(t, "06 02 04 06 00") // [1, 2, 3]
	for name, src := range map[string]string{
		"canonical":      "06 02 04 06 00",
		"two blocks":     "02 02 04 04 06 00",
		"negative count": "05 06 02 04 06 00",    // -3 items, 3 bytes
		"mixed":          "01 02 02 04 04 06 00", // -1 item of 1 byte, then 2 items
		"long varints":   "86 00 82 00 04 06 00", // non-shortest 3 and 1
	} {
		v, err := longs.DecodeAny(unhex(t, src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(v, []any{int64(1), int64(2), int64(3)}) {
			t.Errorf("%s: decoded %v", name, v)
		}
		if got := must[[]byte](t)(longs.AppendAny(nil, v)); !bytes.Equal(got, canonical) {
			t.Errorf("%s: re-encoded %x", name, got)
		}
	}
	// Many items in many blocks: the count grows past one varint byte.
	var src []byte
	for range 100 {
		src = append(src, 0x02, 0x02) // a block of one item, 1
	}
	src = append(src, 0)
	canonical, err := transcode(must[*avroSer[any]](t)(newAvro[any](`{"type":"array","items":"long"}`)).plan, nil, src)
	if err != nil || !bytes.Equal(canonical[:2], []byte{0xc8, 0x01}) || len(canonical) != 2+100+1 {
		t.Fatalf("100 one-item blocks became %x, %v", canonical, err)
	}

	strs := must[Of[any]](t)(AvroGeneric(`{"type":"map","values":"string"}`))
	v := must[any](t)(strs.DecodeAny(unhex(t, "02 0262 0278 01 08 0261 0279 00"))) // {"b":"x"} then a sized block {"a":"y"}
	if got := must[[]byte](t)(strs.AppendAny(nil, v)); !bytes.Equal(got, unhex(t, "04 0261 0279 0262 0278 00")) {
		t.Fatalf("map re-encoded %x", got)
	}
}

func TestAvroDecimalsWithinPrecision(t *testing.T) {
	dec := must[Of[any]](t)(AvroGeneric(`{"type":"bytes","logicalType":"decimal","precision":2}`))
	for _, src := range []string{"00", "02 63", "02 9d", "04 0063", "04 ff9d"} {
		if _, err := dec.Decode(unhex(t, src)); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
}

func TestAvroRejectsMalformed(t *testing.T) {
	for _, c := range []struct {
		schema, src, msg string
	}{
		{openRequestSchema, "0c722d31303933", "OpenRequest.tenant_id: string length truncated at byte 7"},
		{openRequestSchema, "0c722d31303933 16 74656e616e742d61636d65 06 677074 80a0abfef962 8205 00", "1 trailing bytes after the datum"},
		{`"boolean"`, "02", "boolean byte 0x02 at byte 0 is neither 0x00 nor 0x01"},
		{`"int"`, "ffffffff7f", "int overflows at byte 4"},
		{`"int"`, "ffffffff10", "int overflows at byte 4"},
		{`"long"`, "ffffffffffffffffff02", "long overflows at byte 9"},
		{`"long"`, "8080808080808080808000", "long overflows at byte 9"},
		{`{"type":"enum","name":"E","symbols":["A","B"]}`, "04", "enum index 2 out of range [0, 2)"},
		{`["null","long"]`, "04", "union index 2 out of range [0, 2)"},
		{`["null","long"]`, "01", "union index -1 out of range [0, 2)"},
		{`{"type":"fixed","name":"F","size":4}`, "000000", "fixed of 4 bytes at byte 0 exceeds the 3 bytes that remain"},
		{`{"type":"map","values":"long"}`, "04 0261 02 0261 04 00", `map key "a" appears twice`},
		{`{"type":"array","items":"long"}`, "03 08 02 04 00", "block size 4 does not match its 2 bytes"},
		{`{"type":"array","items":"long"}`, "0a 02 00", "block of 5 items does not fit in the 2 bytes that remain"},
		{`{"type":"array","items":"long"}`, "ffffffffffffffffff01 00", "block count -9223372036854775808 out of range"},
		{`"string"`, "01", "string length -1 at byte 0 does not fit in the 0 bytes that remain"},
		{`"string"`, "04 78ff", "string at byte 0 is not valid UTF-8"},
		{`{"type":"map","values":"int"}`, "02 02ff 00 00", "map key at byte 1 is not valid UTF-8"},
		{`"bytes"`, "01", "bytes length -1 at byte 0 does not fit in the 0 bytes that remain"},
		{`{"type":"bytes","logicalType":"decimal","precision":2}`, "02 64", "decimal 100 has more than the 2 digits of its precision"},
		{`{"type":"bytes","logicalType":"decimal","precision":2}`, "02 9c", "decimal -100 has more than the 2 digits of its precision"},
		{`{"type":"bytes","logicalType":"decimal","precision":2,"scale":1}`, "04 0064", "decimal 100 has more than the 2 digits of its precision"},
		{`{"type":"fixed","name":"D","size":2,"logicalType":"decimal","precision":3}`, "03e8", "decimal 1000 has more than the 3 digits of its precision"},
	} {
		s := must[Of[any]](t)(AvroGeneric(c.schema))
		_, err := s.Decode(unhex(t, c.src))
		if !errors.Is(err, ErrDecode) || !strings.HasSuffix(err.Error(), c.msg) {
			t.Errorf("%s: Decode(%s) = %v\n want ErrDecode ending %q", c.schema, c.src, err, c.msg)
		}
	}
}

// hamba alone reads a truncated datum as if the rest were zeros; that is why
// input is checked before hamba sees it.
func TestAvroTruncationCaughtBeforeHamba(t *testing.T) {
	src := unhex(t, "0c722d31303933 16 74656e616e742d61636d65")
	var v OpenRequest
	if err := avro.Unmarshal(avro.MustParse(openRequestSchema), src, &v); err != nil {
		t.Skipf("hamba now reports truncation itself (%v); the check is still needed for lengths", err)
	}
	req := must[Of[OpenRequest]](t)(Avro[OpenRequest](openRequestSchema))
	if _, err := req.Decode(src); !errors.Is(err, ErrDecode) {
		t.Fatalf("truncated OpenRequest decoded: %v", err)
	}
}

func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestAvroHugeLengthsDoNotAllocate(t *testing.T) {
	huge := appendLong(nil, 1<<40)
	for _, c := range []struct{ schema, src string }{
		{`"bytes"`, spacedHex(huge) + " 00 01 02"},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"bytes"}]}`, "02" + spacedHex(huge) + "00"},
		{`{"type":"array","items":"long"}`, spacedHex(huge) + " 02 00"},
		{`{"type":"map","values":"bytes"}`, spacedHex(huge) + " 00"},
		{`{"type":"array","items":"null"}`, spacedHex(huge) + " 00"},
	} {
		s := must[Of[any]](t)(AvroGeneric(c.schema))
		src := unhex(t, c.src)
		var err error
		if n := allocatedBy(func() { _, err = s.Decode(src) }); n > 64<<10 {
			t.Errorf("%s: decoding a claim of 2^40 allocated %d bytes", c.schema, n)
		}
		if !errors.Is(err, ErrDecode) {
			t.Errorf("%s: %v", c.schema, err)
		}
	}
}

func TestAvroLimits(t *testing.T) {
	node := must[Of[any]](t)(AvroGeneric(nodeSchema))
	chain := func(n int) []byte {
		var b []byte
		for i := range n {
			b = append(appendLong(b, int64(i)), 0x02) // value, then the Node branch
		}
		b[len(b)-1] = 0 // the last one's next is null
		return b
	}
	if _, err := node.Decode(chain(400)); err != nil {
		t.Fatalf("400 nodes: %v", err)
	}
	if _, err := node.Decode(chain(5000)); !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "deeper than 1000") {
		t.Fatalf("5000 nodes: %v", err)
	}

	nulls := must[Of[any]](t)(AvroGeneric(`{"type":"array","items":"null"}`))
	v := must[any](t)(nulls.Decode(append(appendLong(nil, 1000), 0)))
	if len(v.([]any)) != 1000 {
		t.Fatalf("1000 nulls decoded to %d", len(v.([]any)))
	}
	// Many small arrays of nulls cannot add up to more than the limit.
	nested := must[Of[any]](t)(AvroGeneric(`{"type":"array","items":{"type":"array","items":"null"}}`))
	var src []byte
	src = appendLong(src, 100)
	for range 100 {
		src = append(appendLong(src, 1000), 0)
	}
	src = append(src, 0)
	if _, err := nested.Decode(src); !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "more than 65536 array items that take no bytes") {
		t.Fatalf("100 x 1000 nulls: %v", err)
	}
}

// Serializers are shared by the engine's subtasks; the pooled buffers must
// not leak between goroutines (run with -race).
func TestAvroConcurrentUse(t *testing.T) {
	sess := must[Of[Session]](t)(Avro[Session](sessionSchema))
	generic := must[Serializer](t)(Restore(sess.Snapshot()))
	want := must[[]byte](t)(sess.Append(nil, sampleSession()))
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 100 {
				b, err := sess.Append(nil, sampleSession())
				if err == nil && !bytes.Equal(b, want) {
					err = errors.New("different bytes")
				}
				if err == nil {
					var v any
					if v, err = generic.DecodeAny(b); err == nil {
						b, err = generic.AppendAny(b[:0], v)
					}
				}
				if err == nil && !bytes.Equal(b, want) {
					err = errors.New("different bytes after a generic round trip")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// Avro strings are UTF-8 both ways, as the string serializer's are: what
// the engine writes, the toolkit and the engine read back.
func TestAvroStringsAreUTF8(t *testing.T) {
	s := must[Of[OpenRequest]](t)(Avro[OpenRequest](openRequestSchema))
	bad := sampleRequest
	bad.Model = "gpt\xff"
	if _, err := s.Append(nil, bad); !errors.Is(err, ErrEncode) || !strings.Contains(err.Error(), "OpenRequest.model: string at byte") {
		t.Fatalf("Append of a string that is not UTF-8: %v", err)
	}
	if _, err := s.Append(nil, sampleRequest); err != nil {
		t.Fatal(err)
	}
	g := must[Of[any]](t)(AvroGeneric(`{"type":"map","values":"int"}`))
	if _, err := g.AppendAny(nil, map[string]any{"\xfe": int32(1)}); !errors.Is(err, ErrEncode) || !strings.Contains(err.Error(), "map key at byte 1 is not valid UTF-8") {
		t.Fatalf("AppendAny of a map key that is not UTF-8: %v", err)
	}
}

// An Avro null is nil in the untyped view: the "null" schema and a union's
// null branch encode it, and the state handles read it back through As.
func TestAvroNullValues(t *testing.T) {
	for schema, enc := range map[string]string{`"null"`: "", `["null","string"]`: "00", `["string","null"]`: "02"} {
		s := must[Of[any]](t)(AvroGeneric(schema))
		b, err := s.AppendAny(nil, nil)
		if err != nil || hex.EncodeToString(b) != enc {
			t.Errorf("%s: AppendAny(nil) = %x, %v; want %s", schema, b, err, enc)
		}
		r := must[Serializer](t)(Restore(s.Snapshot()))
		if v, err := r.DecodeAny(b); err != nil || v != nil {
			t.Errorf("%s: DecodeAny(%x) = %#v, %v", schema, b, v, err)
		}
	}
	if v, ok := As[any](nil); !ok || v != nil {
		t.Errorf("As[any](nil) = %v, %v", v, ok)
	}
	if _, ok := As[*int](nil); ok {
		t.Error("As[*int](nil) is ok: only interface types hold a nil interface")
	}
	if _, ok := As[string](nil); ok {
		t.Error("As[string](nil) is ok")
	}
}
