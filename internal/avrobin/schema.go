package avrobin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/hamba/avro/v2"
)

// MaxFixedSize bounds the size of a fixed type. Unlike a string's, a
// fixed's length is not in the data but in the schema, so a reader sizes
// its buffers from the schema before any value is read: export's Arrow
// builders hold room for 32 values of a fixed column at once. Fixed types
// hold hashes, UUIDs, decimals and durations, tens of bytes.
const MaxFixedSize = 1 << 20

// maxJSONDepth bounds the JSON nesting of a schema before it is parsed. A
// schema within MaxDepth needs up to three levels of JSON per level of Avro
// nesting (record, fields array, field) and its defaults one more.
const maxJSONDepth = 4 * MaxDepth

// ParseSchema parses an Avro schema on its own and checks it against the
// bounds. It returns the schema and its JSON compacted. Each schema gets a
// fresh cache of named types: hamba's shared cache would let a named type
// of one schema leak into another, and the old and new schemas of a
// compatibility check usually share names.
//
// Results are kept by the schema's text (see parsedSchemas): one command
// reads a savepoint's schema several times over, to check the metadata, to
// build its serializer, to label it and to plan its columns. A parsed
// schema is shared and must not be changed.
func ParseSchema(schema string) (avro.Schema, string, error) {
	parsedSchemas.Lock()
	r, ok := parsedSchemas.m[schema]
	parsedSchemas.Unlock()
	if ok {
		return r.schema, r.compact, r.err
	}
	r.schema, r.compact, r.err = parseSchema(schema)
	if len(schema) > maxParsedBytes/16 {
		return r.schema, r.compact, r.err
	}
	parsedSchemas.Lock()
	defer parsedSchemas.Unlock()
	if parsedSchemas.m == nil || len(parsedSchemas.m) >= maxParsedSchemas || parsedSchemas.bytes+len(schema) > maxParsedBytes {
		parsedSchemas.m = make(map[string]parsedSchema)
		parsedSchemas.bytes = 0
	}
	parsedSchemas.m[schema] = r
	parsedSchemas.bytes += len(schema)
	return r.schema, r.compact, r.err
}

// parsedSchemas holds ParseSchema's results, errors too, by schema text;
// it starts again when it holds maxParsedSchemas of them or their texts
// add up to more than maxParsedBytes. A text of more than a sixteenth of
// that is not kept.
var parsedSchemas struct {
	sync.Mutex
	m     map[string]parsedSchema
	bytes int
}

const (
	maxParsedSchemas = 1024
	maxParsedBytes   = 4 << 20
)

type parsedSchema struct {
	schema  avro.Schema
	compact string
	err     error
}

func parseSchema(schema string) (avro.Schema, string, error) {
	if d := jsonDepth(schema); d > maxJSONDepth {
		return nil, "", fmt.Errorf("schema's JSON nests deeper than %d levels", maxJSONDepth)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(schema)); err != nil {
		return nil, "", fmt.Errorf("schema does not parse: not JSON: %w", err)
	}
	compact := buf.String()
	parsed, err := avro.ParseWithCache(compact, "", &avro.SchemaCache{})
	if err != nil {
		return nil, "", fmt.Errorf("schema does not parse: %s", strings.TrimPrefix(err.Error(), "avro: "))
	}
	if err := CheckSchema(parsed); err != nil {
		return nil, "", err
	}
	return parsed, compact, nil
}

// jsonDepth is the deepest nesting of objects and arrays in s, which need
// not be valid JSON.
func jsonDepth(s string) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			deepest = max(deepest, depth)
		case b == '}' || b == ']':
			depth--
		}
	}
	return deepest
}

// CheckSchema checks a parsed schema against the bounds: no fixed larger
// than MaxFixedSize, and no values nested deeper than MaxDepth without
// recursion.
func CheckSchema(s avro.Schema) error {
	w := schemaWalk{height: map[avro.Schema]int{}, onPath: map[avro.Schema]bool{}}
	h, err := w.walk(s, "")
	if err != nil {
		return err
	}
	if h > MaxDepth {
		return fmt.Errorf("schema nests %d levels deep, more than the %d allowed", h, MaxDepth)
	}
	return nil
}

type schemaWalk struct {
	// height holds the records walked: a record used many times is walked
	// once.
	height map[avro.Schema]int
	onPath map[avro.Schema]bool
}

// walk returns the nesting below s: 0 for a primitive, one more than its
// deepest child for a record, array, map or union. A record that contains
// itself adds nothing where it recurs: the data bounds its depth. The walk
// stops as soon as the nesting is past MaxDepth.
func (w *schemaWalk) walk(s avro.Schema, path string) (int, error) {
	s = Deref(s)
	var children []avro.Schema
	var paths func(i int) string
	switch s := s.(type) {
	case *avro.FixedSchema:
		if s.Size() > MaxFixedSize {
			return 0, fmt.Errorf("%sfixed %s has size %d, more than the %d bytes a fixed may have", at(path), s.FullName(), s.Size(), MaxFixedSize)
		}
		return 0, nil
	case *avro.RecordSchema:
		if h, ok := w.height[s]; ok {
			return h, nil
		}
		if w.onPath[s] {
			return 0, nil
		}
		w.onPath[s] = true
		defer delete(w.onPath, s)
		base := path
		if base == "" {
			base = s.Name()
		}
		for _, f := range s.Fields() {
			children = append(children, f.Type())
		}
		paths = func(i int) string { return base + "." + s.Fields()[i].Name() }
	case *avro.ArraySchema:
		children, paths = []avro.Schema{s.Items()}, func(int) string { return path + "[]" }
	case *avro.MapSchema:
		children, paths = []avro.Schema{s.Values()}, func(int) string { return path + "{}" }
	case *avro.UnionSchema:
		children, paths = s.Types(), func(int) string { return path }
	default:
		return 0, nil
	}
	h := 0
	for i, c := range children {
		ch, err := w.walk(c, paths(i))
		if err != nil {
			return 0, err
		}
		if h = max(h, ch+1); h > MaxDepth {
			return h, nil
		}
	}
	if r, ok := s.(*avro.RecordSchema); ok {
		w.height[r] = h
	}
	return h, nil
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

// Deref is the schema a named reference stands for.
func Deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// MinSize is the fewest bytes a datum of the schema takes, which a Cursor
// checks counts against. A record counts no bytes where it recurs.
func MinSize(s avro.Schema) int {
	return minSizes{}.of(s)
}

// minSizes holds the records measured, or -1 for those being measured: a
// record used many times is measured once.
type minSizes map[avro.Schema]int

func (m minSizes) of(s avro.Schema) int {
	s = Deref(s)
	switch s := s.(type) {
	case *avro.NullSchema:
		return 0
	case *avro.FixedSchema:
		return s.Size()
	case *avro.RecordSchema:
		if n, ok := m[s]; ok {
			return max(n, 0)
		}
		m[s] = -1
		n := 0
		for _, f := range s.Fields() {
			n += m.of(f.Type())
		}
		m[s] = n
		return n
	}
	switch s.Type() {
	case avro.Float:
		return 4
	case avro.Double:
		return 8
	}
	// A boolean, a varint, a length, an enum or union index, an array's or
	// map's closing count: one byte at least.
	return 1
}
