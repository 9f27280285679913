package avrobin

import (
	"fmt"
	"strings"
	"testing"
)

// A schema's text parsed again gives the schema parsed the first time, an
// error included; the cache starts again at its bounds, and a schema
// parsed after that is parsed anew, equal to the first.
func TestParseSchemaKeepsResults(t *testing.T) {
	const rec = `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`
	a, ca, err := ParseSchema(rec)
	if err != nil {
		t.Fatal(err)
	}
	b, cb, err := ParseSchema(rec)
	if err != nil || a != b || ca != cb {
		t.Fatalf("second parse gave another schema: %p %p, %q %q, %v", a, b, ca, cb, err)
	}
	_, _, e1 := ParseSchema(`{"type":"nosuch"}`)
	_, _, e2 := ParseSchema(`{"type":"nosuch"}`)
	if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
		t.Fatalf("errors %v, %v", e1, e2)
	}
	// Fill the cache past its count: it starts again.
	for i := range maxParsedSchemas + 10 {
		if _, _, err := ParseSchema(fmt.Sprintf(`{"type":"fixed","name":"F%d","size":4}`, i)); err != nil {
			t.Fatal(err)
		}
		parsedSchemas.Lock()
		n := len(parsedSchemas.m)
		parsedSchemas.Unlock()
		if n > maxParsedSchemas {
			t.Fatalf("the cache holds %d schemas, more than %d", n, maxParsedSchemas)
		}
	}
	c, cc, err := ParseSchema(rec)
	if err != nil || c == a || cc != ca || c.String() != a.String() {
		t.Fatalf("after the cache started again: %p (first %p), %q, %v", c, a, cc, err)
	}
	// A long text is parsed every time, never kept, and leaves the cache
	// as it was.
	long := `{"type":"record","name":"L","doc":"` + strings.Repeat("x", maxParsedBytes/16) + `","fields":[]}`
	l1, _, err := ParseSchema(long)
	if err != nil {
		t.Fatal(err)
	}
	l2, _, _ := ParseSchema(long)
	parsedSchemas.Lock()
	_, kept := parsedSchemas.m[long]
	total := parsedSchemas.bytes
	parsedSchemas.Unlock()
	if kept || l1 == l2 || total > maxParsedBytes {
		t.Errorf("a %d-byte schema was kept (%v, same object %v), cache bytes %d", len(long), kept, l1 == l2, total)
	}
	if d, _, _ := ParseSchema(rec); d != c {
		t.Errorf("a long schema emptied the cache")
	}
}
