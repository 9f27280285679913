package filesource

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// structFields is how CSV columns go into the fields of a struct.
type structFields struct {
	typ    reflect.Type
	names  map[string]int // lower-cased column name to field index
	fields []reflect.StructField
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func fieldsOf[T any]() (*structFields, error) {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("filesource: CSV into %v needs Options.DecodeCSV: only a struct's fields are filled by column name", typ)
	}
	s := &structFields{typ: typ, names: map[string]int{}}
	for _, f := range reflect.VisibleFields(typ) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("csv"); ok {
			if tag == "-" {
				continue
			}
			name, _, _ = strings.Cut(tag, ",")
		}
		if !settable(f.Type) {
			return nil, fmt.Errorf("filesource: CSV into %v: field %s of type %v is neither a string, a boolean, a number nor an encoding.TextUnmarshaler", typ, f.Name, f.Type)
		}
		s.names[strings.ToLower(name)] = len(s.fields)
		s.fields = append(s.fields, f)
	}
	return s, nil
}

func settable(t reflect.Type) bool {
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// columns maps a header's columns to field indexes, -1 for a column no
// field takes.
func (s *structFields) columns(header []string) []int {
	cols := make([]int, len(header))
	for i, h := range header {
		j, ok := s.names[strings.ToLower(strings.TrimSpace(h))]
		if !ok {
			j = -1
		}
		cols[i] = j
	}
	return cols
}

func (s *structFields) set(dst any, header []string, cols []int, values []string) error {
	v := reflect.ValueOf(dst).Elem()
	for i, j := range cols {
		if j < 0 {
			continue
		}
		f := s.fields[j]
		if err := setField(v.FieldByIndex(f.Index), values[i]); err != nil {
			return fmt.Errorf("column %q: %w", header[i], err)
		}
	}
	return nil
}

func setField(f reflect.Value, s string) error {
	if u, ok := f.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(s))
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetUint(n)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(s, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetFloat(x)
	}
	return nil
}
