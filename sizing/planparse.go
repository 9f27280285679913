package sizing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/stateproc/stateproc/keygroup"
)

// PlanError is a mistake in a plan file: the file, the line, the field
// (as a path such as operators[0].states[1].kind) and what is wrong.
type PlanError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *PlanError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %s", e.Msg)
	return b.String()
}

// ReadPlan reads and checks a plan file, YAML or JSON (which the YAML
// parser reads too, so errors have lines either way).
func ReadPlan(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &PlanError{File: path, Msg: "no such file"}
		}
		return nil, &PlanError{File: path, Msg: err.Error()}
	}
	return ParsePlan(path, data)
}

// ParsePlan parses and checks the plan in data; name is used in errors.
func ParsePlan(name string, data []byte) (*Plan, error) {
	if strings.EqualFold(filepath.Ext(name), ".json") {
		// JSON forbids raw tabs inside strings, so every tab is
		// whitespace, which YAML does not accept for indentation.
		data = bytes.ReplaceAll(data, []byte("\t"), []byte(" "))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(name, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &PlanError{File: name, Msg: "the plan is empty"}
	}
	p := &planReader{file: name}
	plan := &Plan{File: name}
	if err := p.plan(doc.Content[0], plan); err != nil {
		return nil, err
	}
	return plan, nil
}

// syntaxError turns yaml.v3's "yaml: line N: msg" into a PlanError.
func syntaxError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &PlanError{File: file, Msg: msg}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				e.Line, e.Msg = n, rest[i+2:]
			}
		}
	}
	return e
}

// planReader walks the YAML tree, so that every error can name the line
// and the field it is about.
type planReader struct{ file string }

func (p *planReader) fail(n *yaml.Node, field, format string, args ...any) error {
	return &PlanError{File: p.file, Line: n.Line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// fields reads a mapping: each key must be one of the fields, at most once,
// and every required one must be there.
func (p *planReader) fields(n *yaml.Node, path string, fields map[string]func(v *yaml.Node, field string) error, required ...string) error {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return p.fail(n, path, "must be a mapping of fields, not %s", describeNode(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		field := join(path, k.Value)
		if seen[k.Value] {
			return p.fail(k, field, "given twice")
		}
		seen[k.Value] = true
		read, ok := fields[k.Value]
		if !ok {
			return p.fail(k, field, "unknown field%s", suggest(k.Value, fields))
		}
		if err := read(v, field); err != nil {
			return err
		}
	}
	for _, r := range required {
		if !seen[r] {
			return p.fail(n, join(path, r), "missing")
		}
	}
	return nil
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "nothing"
}

// suggest names the field the user probably meant.
func suggest(got string, fields map[string]func(*yaml.Node, string) error) string {
	names := make([]string, 0, len(fields))
	for f := range fields {
		if strings.EqualFold(f, got) {
			return fmt.Sprintf(" (did you mean %s?)", f)
		}
		names = append(names, f)
	}
	sort.Strings(names)
	return fmt.Sprintf(" (fields: %s)", strings.Join(names, ", "))
}

func (p *planReader) number(n *yaml.Node, field string, dst *float64, min float64, whole bool) error {
	var f float64
	if n.Kind != yaml.ScalarNode || n.Tag == "!!str" || n.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return p.fail(n, field, "must be a number, not %s", describeNode(n))
	}
	if whole && f != math.Trunc(f) {
		return p.fail(n, field, "must be a whole number, not %s", n.Value)
	}
	if f < min || (min == 0 && f == 0) {
		if min == 0 {
			return p.fail(n, field, "must be above 0, not %s", n.Value)
		}
		return p.fail(n, field, "must be at least %g, not %s", min, n.Value)
	}
	if f > MaxCount {
		return p.fail(n, field, "must be at most %.0e, not %s", MaxCount, n.Value)
	}
	*dst = f
	return nil
}

func (p *planReader) integer(n *yaml.Node, field string, dst *int, min float64) error {
	var f float64
	if err := p.number(n, field, &f, min, true); err != nil {
		return err
	}
	if f > keygroup.MaxParallelismLimit {
		return p.fail(n, field, "must be at most %d, not %s", keygroup.MaxParallelismLimit, n.Value)
	}
	*dst = int(f)
	return nil
}

func (p *planReader) text(n *yaml.Node, field string, dst *string) error {
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		return p.fail(n, field, "must be a non-empty string, not %s", describeNode(n))
	}
	*dst = n.Value
	return nil
}

// oneOf reads a string that must be one of choices.
func (p *planReader) oneOf(n *yaml.Node, field string, dst *string, choices []string) error {
	if err := p.text(n, field, dst); err != nil {
		return err
	}
	if !slices.Contains(choices, *dst) {
		return p.fail(n, field, "%q is not one of %s", *dst, strings.Join(choices, ", "))
	}
	return nil
}

func (p *planReader) plan(n *yaml.Node, plan *Plan) error {
	var ops *yaml.Node
	err := p.fields(n, "", map[string]func(*yaml.Node, string) error{
		"name": func(v *yaml.Node, f string) error { return p.text(v, f, &plan.Name) },
		"heapOverhead": func(v *yaml.Node, f string) error {
			plan.HeapOverhead = &Range{}
			return p.overhead(v, f, plan.HeapOverhead)
		},
		"operators": func(v *yaml.Node, f string) error { ops = v; return nil },
	}, "operators")
	if err != nil {
		return err
	}
	if ops.Kind != yaml.SequenceNode || len(ops.Content) == 0 {
		return p.fail(ops, "operators", "must be a list of at least one operator, not %s", describeNode(ops))
	}
	uids := map[string]bool{}
	for i, on := range ops.Content {
		path := fmt.Sprintf("operators[%d]", i)
		var op PlanOperator
		if err := p.operator(deref(on), path, &op); err != nil {
			return err
		}
		if uids[op.UID] {
			return p.fail(on, path+".uid", "operator %q is planned twice", op.UID)
		}
		uids[op.UID] = true
		plan.Operators = append(plan.Operators, op)
	}
	return nil
}

// overhead reads a factor or a [low, high] range of factors.
func (p *planReader) overhead(n *yaml.Node, field string, r *Range) error {
	if n.Kind == yaml.ScalarNode {
		if err := p.number(n, field, &r.Low, 0, false); err != nil {
			return err
		}
		r.High = r.Low
		return nil
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) != 2 {
		return p.fail(n, field, "must be a factor such as 4, or a range such as [3, 5]")
	}
	if err := p.number(deref(n.Content[0]), field+"[0]", &r.Low, 0, false); err != nil {
		return err
	}
	if err := p.number(deref(n.Content[1]), field+"[1]", &r.High, 0, false); err != nil {
		return err
	}
	if r.Low > r.High {
		return p.fail(n, field, "the low factor %g is above the high one %g", r.Low, r.High)
	}
	return nil
}

func (p *planReader) operator(n *yaml.Node, path string, op *PlanOperator) error {
	var states *yaml.Node
	var maxAt *yaml.Node
	err := p.fields(n, path, map[string]func(*yaml.Node, string) error{
		"uid":            func(v *yaml.Node, f string) error { return p.text(v, f, &op.UID) },
		"parallelism":    func(v *yaml.Node, f string) error { return p.integer(v, f, &op.Parallelism, 1) },
		"maxParallelism": func(v *yaml.Node, f string) error { maxAt = v; return p.integer(v, f, &op.MaxParallelism, 1) },
		"states":         func(v *yaml.Node, f string) error { states = v; return nil },
	}, "uid", "parallelism", "states")
	if err != nil {
		return err
	}
	if maxAt != nil {
		if err := keygroup.Validate(op.Parallelism, op.MaxParallelism); err != nil {
			return p.fail(maxAt, path+".maxParallelism", "%s", strings.TrimPrefix(err.Error(), keygroup.ErrInvalid.Error()+": "))
		}
	}
	if states.Kind != yaml.SequenceNode || len(states.Content) == 0 {
		return p.fail(states, path+".states", "must be a list of at least one state, not %s", describeNode(states))
	}
	names := map[string]bool{}
	for i, sn := range states.Content {
		spath := fmt.Sprintf("%s.states[%d]", path, i)
		var s PlanState
		if err := p.state(deref(sn), spath, &s); err != nil {
			return err
		}
		if names[s.Name] {
			return p.fail(sn, spath+".name", "state %q is planned twice in operator %q", s.Name, op.UID)
		}
		names[s.Name] = true
		op.States = append(op.States, s)
	}
	return nil
}

func (p *planReader) state(n *yaml.Node, path string, s *PlanState) error {
	at := map[string]*yaml.Node{}
	mark := func(name string, read func(v *yaml.Node, f string) error) func(*yaml.Node, string) error {
		return func(v *yaml.Node, f string) error { at[name] = v; return read(v, f) }
	}
	s.EntriesPerKey = 1
	err := p.fields(n, path, map[string]func(*yaml.Node, string) error{
		"name": func(v *yaml.Node, f string) error { return p.text(v, f, &s.Name) },
		"kind": mark("kind", func(v *yaml.Node, f string) error { return p.oneOf(v, f, &s.Kind, planKinds) }),
		"keys": func(v *yaml.Node, f string) error { return p.number(v, f, &s.Keys, 1, true) },
		"entriesPerKey": mark("entriesPerKey", func(v *yaml.Node, f string) error {
			return p.number(v, f, &s.EntriesPerKey, 0, false)
		}),
		"bytesPerEntry": func(v *yaml.Node, f string) error { return p.number(v, f, &s.BytesPerEntry, 0, false) },
		"keyType":       mark("keyType", func(v *yaml.Node, f string) error { return p.oneOf(v, f, &s.KeyType, keyTypes) }),
		"keyBytes":      mark("keyBytes", func(v *yaml.Node, f string) error { return p.number(v, f, &s.KeyBytes, 0, false) }),
		"namespace":     func(v *yaml.Node, f string) error { return p.oneOf(v, f, &s.Namespace, []string{"void", "window"}) },
		"mapKeyType":    mark("mapKeyType", func(v *yaml.Node, f string) error { return p.oneOf(v, f, &s.MapKeyType, keyTypes) }),
		"mapKeyBytes":   mark("mapKeyBytes", func(v *yaml.Node, f string) error { return p.number(v, f, &s.MapKeyBytes, 0, false) }),
		"valueType":     mark("valueType", func(v *yaml.Node, f string) error { return p.oneOf(v, f, &s.ValueType, valueTypes) }),
		"valueBytes":    mark("valueBytes", func(v *yaml.Node, f string) error { return p.number(v, f, &s.ValueBytes, 0, false) }),
		"valueSchema":   mark("valueSchema", func(v *yaml.Node, f string) error { return p.schema(v, f, &s.ValueSchema) }),
		"ttl":           mark("ttl", func(v *yaml.Node, f string) error { return p.duration(v, f, &s.TTL) }),
	}, "name", "kind", "keys")
	if err != nil {
		return err
	}
	return p.checkState(n, path, s, at)
}

// checkState checks what depends on more than one field.
func (p *planReader) checkState(n *yaml.Node, path string, s *PlanState, at map[string]*yaml.Node) error {
	if s.Kind == kindTimers {
		for _, f := range []string{"mapKeyType", "mapKeyBytes", "valueType", "valueBytes", "valueSchema", "ttl"} {
			if v := at[f]; v != nil {
				return p.fail(v, path+"."+f, "a timer service has no %s", f)
			}
		}
	} else if s.ValueType == "" && s.ValueSchema == "" {
		return p.fail(n, path+".valueType", "missing: the heap model needs the value's type (%s), or valueSchema for Avro",
			strings.Join(valueTypes, ", "))
	}
	if s.Kind != "map" {
		for _, f := range []string{"mapKeyType", "mapKeyBytes"} {
			if v := at[f]; v != nil {
				return p.fail(v, path+"."+f, "only a map state has map keys")
			}
		}
	}
	single := s.Kind == "value" || s.Kind == "reducing" || s.Kind == "aggregating"
	if v := at["entriesPerKey"]; v != nil && single && s.Namespace != "window" && s.EntriesPerKey != 1 {
		return p.fail(v, path+".entriesPerKey", "a %s state holds one entry per key (more only with namespace: window)", s.Kind)
	}
	if s.ValueSchema != "" {
		if s.ValueType == "" {
			s.ValueType = "avro"
		} else if s.ValueType != "avro" {
			return p.fail(at["valueSchema"], path+".valueSchema", "a schema goes with valueType avro, not %s", s.ValueType)
		}
	} else if s.ValueType == "avro" {
		return p.fail(at["valueType"], path+".valueSchema", "missing: valueType avro needs the schema")
	}
	if s.KeyType == "avro" && s.KeyBytes == 0 {
		return p.fail(at["keyType"], path+".keyBytes", "missing: an Avro key needs its size in bytes")
	}
	if s.MapKeyType == "avro" && s.MapKeyBytes == 0 {
		return p.fail(at["mapKeyType"], path+".mapKeyBytes", "missing: an Avro map key needs its size in bytes")
	}
	for _, c := range []struct{ typ, bytesField string }{{s.KeyType, "keyBytes"}, {s.MapKeyType, "mapKeyBytes"}, {s.ValueType, "valueBytes"}} {
		v := at[c.bytesField]
		if w, fixed := fixedWidth[c.typ]; fixed && v != nil {
			var got float64
			_ = v.Decode(&got)
			if got != float64(w) {
				return p.fail(v, path+"."+c.bytesField, "a %s always takes %d bytes", c.typ, w)
			}
		}
	}
	return nil
}

// schema reads an Avro schema, as a JSON string or as YAML, and checks
// that it parses.
func (p *planReader) schema(n *yaml.Node, field string, dst *string) error {
	if n.Kind == yaml.ScalarNode {
		*dst = n.Value
	} else {
		var v any
		if err := n.Decode(&v); err != nil {
			return p.fail(n, field, "%v", err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return p.fail(n, field, "cannot be written as JSON: %v", err)
		}
		*dst = string(b)
	}
	if _, err := parseAvroLayout(*dst); err != nil {
		return p.fail(n, field, "%v", err)
	}
	return nil
}

// duration reads Go duration syntax with d for days (7d, 36h, 1d12h).
func (p *planReader) duration(n *yaml.Node, field string, dst *time.Duration) error {
	bad := func() error {
		return p.fail(n, field, "%s is not a duration such as 7d, 36h or 10m", describeNode(n))
	}
	if n.Kind != yaml.ScalarNode {
		return bad()
	}
	rest, total := n.Value, time.Duration(0)
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		days, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil || days < 0 {
			return bad()
		}
		total, rest = time.Duration(days*float64(24*time.Hour)), rest[i+1:]
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return bad()
		}
		total += d
	}
	if total < time.Millisecond {
		return p.fail(n, field, "must be at least a millisecond, not %s", n.Value)
	}
	*dst = total
	return nil
}
