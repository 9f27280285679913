package jsonvalue

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stateproc/stateproc/serializers"
)

// TestUnionsReadApart decodes values with the real Avro serializer and
// renders them: a union's branch is named, so that a float and a long of
// the same number differ; an optional value, or one of a union of one
// type, is bare; a float has a float's precision, as export writes it;
// record fields keep the schema's order.
func TestUnionsReadApart(t *testing.T) {
	for _, tc := range []struct {
		schema string
		value  any
		want   string
	}{
		{`["float","long"]`, map[string]any{"float": float32(42)}, `{"float":42}`},
		{`["float","long"]`, map[string]any{"long": int64(42)}, `{"long":42}`},
		{`["null","string"]`, "x", `"x"`},
		{`["string"]`, "only", `"only"`},
		{`"float"`, float32(0.1), `0.1`},
		{`["float","long"]`, map[string]any{"float": float32(1e-45)}, `{"float":1e-45}`},
		{`"double"`, 0.1, `0.1`},
		{`["null","string","long"]`, map[string]any{"long": int64(3)}, `{"long":3}`},
		{`{"type":"record","name":"R","namespace":"n","fields":[{"name":"z","type":["null","int"]},{"name":"a","type":["int","string",{"type":"record","name":"S","fields":[{"name":"x","type":"bytes"}]}]}]}`,
			map[string]any{"z": nil, "a": map[string]any{"n.S": map[string]any{"x": []byte{1, 255}}}}, `{"z":null,"a":{"S":{"x":"01ff"}}}`},
		{`{"type":"record","name":"R","fields":[{"name":"b","type":"long"},{"name":"a","type":["null","int"]}]}`,
			map[string]any{"a": 7, "b": int64(1)}, `{"b":1,"a":7}`},
	} {
		snap := serializers.Snapshot{Kind: serializers.KindAvro, Schema: tc.schema}
		ser, err := serializers.Restore(snap)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ser.AppendAny(nil, tc.value)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.schema, tc.value, err)
		}
		v, err := ser.DecodeAny(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(For(snap)(v))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.schema, tc.value, got, tc.want)
		}
	}
}

// An object's members follow the escaping of the encoder that writes it,
// as strings outside it do: HTML's characters stay as they are where the
// encoder leaves them, and are escaped where it escapes them.
func TestObjectsEscapeAsTheirEncoder(t *testing.T) {
	v := []any{"<a&b>", Object([]string{"k<&>"}, []any{Object([]string{"in"}, []any{"x<y>&z"})})}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), `["<a&b>",{"k<&>":{"in":"x<y>&z"}}]`+"\n"; got != want {
		t.Fatalf("without HTML escaping: %s, want %s", got, want)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `["\u003ca\u0026b\u003e",{"k\u003c\u0026\u003e":{"in":"x\u003cy\u003e\u0026z"}}]`; got != want {
		t.Fatalf("with HTML escaping: %s, want %s", got, want)
	}
}
