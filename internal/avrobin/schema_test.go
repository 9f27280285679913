package avrobin

import (
	"fmt"
	"strings"
	"testing"
)

// nestedArrays is n arrays, one in the other, of ints.
func nestedArrays(n int) string {
	return strings.Repeat(`{"type":"array","items":`, n) + `"int"` + strings.Repeat("}", n)
}

// nestedRecords is n records, each the only field of the one outside it.
func nestedRecords(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"type":"record","name":"R%d","fields":[{"name":"f","type":`, i)
	}
	b.WriteString(`"int"`)
	b.WriteString(strings.Repeat("}]}", n))
	return b.String()
}

func TestParseSchemaDepth(t *testing.T) {
	for _, c := range []struct {
		name, schema, err string
	}{
		{"arrays at the bound", nestedArrays(MaxDepth), ""},
		{"arrays past the bound", nestedArrays(MaxDepth + 1), "schema nests 1001 levels deep, more than the 1000 allowed"},
		{"records at the bound", nestedRecords(MaxDepth), ""},
		{"records past the bound", nestedRecords(MaxDepth + 1), "schema nests 1001 levels deep, more than the 1000 allowed"},
		{"unions past the bound", strings.Repeat(`["null",{"type":"map","values":`, 501) + `"int"` + strings.Repeat("}]", 501), "schema nests 1002 levels deep, more than the 1000 allowed"},
		{"JSON past its bound", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "schema's JSON nests deeper than 4000 levels"},
		{"brackets in strings do not count", `{"type":"record","name":"R","doc":"` + strings.Repeat("[{", 5000) + `","fields":[]}`, ""},
		{"a recursive record is bounded by its data", `{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`, ""},
		{"not JSON", `{"type":`, "schema does not parse: not JSON: unexpected end of JSON input"},
		{"no prefix from hamba", `{"type":"nothing"}`, "schema does not parse: unknown type: nothing"},
		{"fixed at its bound", `{"type":"fixed","name":"F","size":1048576}`, ""},
		{"fixed past its bound", `{"type":"fixed","name":"F","size":1099511627776}`, "fixed F has size 1099511627776, more than the 1048576 bytes a fixed may have"},
		{"fixed deep inside", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":{"type":"fixed","name":"F","size":1048577}}}]}`, "R.a[]: fixed F has size 1048577, more than the 1048576 bytes a fixed may have"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseSchema(c.schema)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || err.Error() != c.err):
				t.Fatalf("got %v, want %q", err, c.err)
			}
		})
	}
}

// A schema can reuse a named type deep inside another branch, so its
// values nest deeper than its JSON: the bound is on the values.
func TestParseSchemaDepthThroughReferences(t *testing.T) {
	// Top.b, then arrays, then R0 of 600 levels.
	schema := func(arrays int) string {
		return `{"type":"record","name":"Top","fields":[{"name":"a","type":` + nestedRecords(600) + `},{"name":"b","type":` +
			strings.Repeat(`{"type":"array","items":`, arrays) + `"R0"` + strings.Repeat("}", arrays) + `}]}`
	}
	if _, _, err := ParseSchema(schema(399)); err != nil {
		t.Fatalf("1000 levels: %v", err)
	}
	_, _, err := ParseSchema(schema(400))
	if err == nil || err.Error() != "schema nests 1001 levels deep, more than the 1000 allowed" {
		t.Fatalf("1001 levels: got %v", err)
	}
}

// Records that each hold two of the one before make a schema whose tree
// is exponential in its size; the checks walk each record once.
func TestSchemaWalksAreLinear(t *testing.T) {
	schema := `{"type":"record","name":"R0","fields":[{"name":"x","type":"long"}]}`
	for i := 1; i <= 60; i++ {
		schema = fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"a","type":%s},{"name":"b","type":"R%d"}]}`, i, schema, i-1)
	}
	s, _, err := ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := MinSize(s), 1<<60; got != want {
		t.Fatalf("MinSize = %d, want %d", got, want)
	}
}

func TestMinSize(t *testing.T) {
	for schema, want := range map[string]int{
		`"null"`:                                0,
		`"boolean"`:                             1,
		`"float"`:                               4,
		`"double"`:                              8,
		`"string"`:                              1,
		`{"type":"fixed","name":"F","size":16}`: 16,
		`{"type":"record","name":"R","fields":[{"name":"a","type":"null"},{"name":"b","type":"null"}]}`:         0,
		`{"type":"record","name":"R","fields":[{"name":"a","type":"double"},{"name":"b","type":["null","R"]}]}`: 9,
		`{"type":"array","items":"double"}`:          1,
		`["double","null"]`:                          1,
		`{"type":"enum","name":"E","symbols":["A"]}`: 1,
	} {
		s, _, err := ParseSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		if got := MinSize(s); got != want {
			t.Errorf("MinSize(%s) = %d, want %d", schema, got, want)
		}
	}
}
