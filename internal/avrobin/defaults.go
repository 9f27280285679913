package avrobin

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Defaults are the field defaults of a schema as its JSON writes them, by
// the full name of their record and the field's name: numbers stay
// json.Number, exact. hamba/avro reads a default through float64, which
// rounds a long past 2^53 and turns 2^63-1 into -2^63; a migration that
// writes defaults takes them from here.
type Defaults map[string]map[string]any

// FieldDefaults reads the field defaults of schema, a schema's JSON that
// ParseSchema accepted. A default of an int or long field, or of a record
// field's int or long inside a default, must be a JSON integer in range,
// as the specification's table of defaults says: 1.9 or 1e3 for an int,
// which hamba would truncate, is refused.
func FieldDefaults(schema string) (Defaults, error) {
	d := json.NewDecoder(strings.NewReader(schema))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("schema does not parse: not JSON: %w", err)
	}
	w := defaultsWalk{defaults: Defaults{}, named: map[string]any{}}
	if err := w.walk(v, ""); err != nil {
		return nil, err
	}
	return w.defaults, nil
}

type defaultsWalk struct {
	defaults Defaults
	// named holds the named types seen, by full name, so that the
	// defaults of fields whose type is a reference can be checked.
	named map[string]any
	// fields are the record fields with defaults, checked once every
	// named type is known.
	fields []fieldDefault
}

type fieldDefault struct {
	typ       any
	namespace string
	def       any
	where     string
}

func (w *defaultsWalk) walk(v any, namespace string) error {
	if err := w.types(v, namespace); err != nil {
		return err
	}
	for _, f := range w.fields {
		if err := w.check(f.typ, f.namespace, f.def, f.where, 0); err != nil {
			return err
		}
	}
	return nil
}

// types walks a type's JSON: it records the named types and the defaults
// of every record's fields, under the record's full name.
func (w *defaultsWalk) types(v any, namespace string) error {
	switch v := v.(type) {
	case []any:
		for _, b := range v {
			if err := w.types(b, namespace); err != nil {
				return err
			}
		}
	case map[string]any:
		t, _ := v["type"].(string)
		switch t {
		case "record", "error", "enum", "fixed":
			full, ns := fullName(v, namespace)
			w.named[full] = v
			if t == "enum" || t == "fixed" {
				return nil
			}
			fields, _ := v["fields"].([]any)
			for _, f := range fields {
				f, _ := f.(map[string]any)
				name, _ := f["name"].(string)
				if def, ok := f["default"]; ok {
					if w.defaults[full] == nil {
						w.defaults[full] = map[string]any{}
					}
					w.defaults[full][name] = def
					w.fields = append(w.fields, fieldDefault{typ: f["type"], namespace: ns, def: def, where: full + "." + name})
				}
				if err := w.types(f["type"], ns); err != nil {
					return err
				}
			}
		case "array":
			return w.types(v["items"], namespace)
		case "map":
			return w.types(v["values"], namespace)
		default:
			if inner, ok := v["type"].(map[string]any); ok {
				return w.types(inner, namespace)
			}
			if inner, ok := v["type"].([]any); ok {
				return w.types(inner, namespace)
			}
		}
	}
	return nil
}

// fullName is a named type's full name and the namespace its own names
// resolve in, by the specification's rules.
func fullName(v map[string]any, enclosing string) (full, namespace string) {
	name, _ := v["name"].(string)
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name, name[:i]
	}
	namespace = enclosing
	if ns, ok := v["namespace"].(string); ok {
		namespace = ns
	}
	if namespace == "" {
		return name, ""
	}
	return namespace + "." + name, namespace
}

// check looks at the int and long values in def, a default of type typ.
// Other values hamba checked when it parsed the schema.
func (w *defaultsWalk) check(typ any, namespace string, def any, where string, depth int) error {
	if depth > MaxDepth {
		return nil
	}
	switch t := typ.(type) {
	case string:
		switch t {
		case "int", "long":
			return checkInteger(t, def, where)
		}
		full := t
		if !strings.Contains(t, ".") && namespace != "" {
			full = namespace + "." + t
		}
		named, ok := w.named[full]
		if !ok {
			named, ok = w.named[t]
		}
		if ok {
			return w.check(named, namespace, def, where, depth+1)
		}
	case []any:
		// A union's default is of its first branch.
		if len(t) > 0 {
			return w.check(t[0], namespace, def, where, depth+1)
		}
	case map[string]any:
		switch t["type"] {
		case "record", "error":
			m, _ := def.(map[string]any)
			full, ns := fullName(t, namespace)
			fields, _ := t["fields"].([]any)
			for _, f := range fields {
				f, _ := f.(map[string]any)
				name, _ := f["name"].(string)
				if fv, ok := m[name]; ok {
					if err := w.check(f["type"], ns, fv, full+"."+name, depth+1); err != nil {
						return err
					}
				}
			}
		case "array":
			items, _ := def.([]any)
			for _, item := range items {
				if err := w.check(t["items"], namespace, item, where+"[]", depth+1); err != nil {
					return err
				}
			}
		case "map":
			m, _ := def.(map[string]any)
			for _, v := range m {
				if err := w.check(t["values"], namespace, v, where+"{}", depth+1); err != nil {
					return err
				}
			}
		case "enum", "fixed":
		default:
			// {"type": "long", "logicalType": ...}, or a type wrapped.
			if inner, ok := t["type"]; ok {
				return w.check(inner, namespace, def, where, depth+1)
			}
		}
	}
	return nil
}

// checkInteger refuses a default of an int or long that is not a JSON
// integer within the type's range.
func checkInteger(typ string, def any, where string) error {
	n, ok := def.(json.Number)
	if !ok {
		return nil // not a number: hamba refuses it
	}
	bits, what := 32, "an int"
	if typ == "long" {
		bits, what = 64, "a long"
	}
	if _, err := ParseInteger(n, bits); err != nil {
		return fmt.Errorf("schema does not parse: field %s: default %s is not %s", where, n, what)
	}
	return nil
}

// ParseInteger reads an int (bits 32) or long (bits 64) default: a JSON
// integer, without fraction or exponent, within range.
func ParseInteger(n json.Number, bits int) (int64, error) {
	if strings.ContainsAny(string(n), ".eE") {
		return 0, fmt.Errorf("%s is not an integer", n)
	}
	return strconv.ParseInt(string(n), 10, bits)
}
