package evolve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/internal/avrobin"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Target is what a savepoint is checked against and migrated to: the
// operators of a job as it declares them.
type Target struct {
	// Name says where the target comes from, in reports and lineage.
	Name      string
	Operators []compat.Declared
}

// JobTarget is the job a manifest describes.
func JobTarget(m savepoint.Manifest) (Target, error) {
	ops, err := m.Model()
	if err != nil {
		return Target{}, err
	}
	t := Target{Name: fmt.Sprintf("job %q", m.Job)}
	seen := map[string]bool{}
	for i, op := range ops {
		if seen[op.UID] {
			return Target{}, fmt.Errorf("savepoint: manifest: two operators have uid %q", op.UID)
		}
		seen[op.UID] = true
		t.Operators = append(t.Operators, compat.Declared{Operator: op, MaxParallelismSet: m.Operators[i].MaxParallelismSet})
	}
	return t, nil
}

// SchemaChange gives one keyed state a new Avro schema.
type SchemaChange struct {
	Operator, State string
	Schema          string
	// From names where the schema came from (a file), for reports.
	From string
}

// SchemaTarget is the savepoint's own job with, for each change, the Avro
// schema in the value serializer of the named state replaced: a way to try
// or apply a new schema without a manifest. A state whose values hold no
// Avro schema, or more than one, is refused.
func SchemaTarget(meta *savepoint.Metadata, changes []SchemaChange) (Target, error) {
	t := Target{}
	for i := range meta.Operators {
		op := meta.Operators[i]
		op.States = slices.Clone(op.States)
		t.Operators = append(t.Operators, compat.Declared{Operator: op})
	}
	var names []string
	for _, c := range changes {
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(c.Schema)); err != nil {
			return Target{}, rewrite.Refusef("%s: the schema is not JSON: %v", c.From, err)
		}
		i := slices.IndexFunc(t.Operators, func(d compat.Declared) bool { return d.UID == c.Operator })
		if i < 0 {
			return Target{}, rewrite.Refusef("no operator %q in the savepoint", c.Operator)
		}
		s, ok := t.Operators[i].State(c.State)
		if !ok {
			return Target{}, rewrite.Refusef("operator %q has no keyed state %q", c.Operator, c.State)
		}
		value, n := withSchema(s.Value, compact.String())
		if n != 1 {
			return Target{}, rewrite.Refusef("the values of %s/%s are %s, which holds %d Avro schemas: --schema replaces exactly one", c.Operator, c.State, s.Value, n)
		}
		if _, _, err := avrobin.ParseSchema(compact.String()); err != nil {
			return Target{}, rewrite.Refusef("%s: %v", c.From, err)
		}
		if _, err := avrobin.FieldDefaults(compact.String()); err != nil {
			return Target{}, rewrite.Refusef("%s: %v", c.From, err)
		}
		s.Value = value
		names = append(names, fmt.Sprintf("%s/%s=%s", c.Operator, c.State, c.From))
	}
	t.Name = "--schema " + strings.Join(names, " --schema ")
	return t, nil
}

// withSchema returns s with the schema of each Avro serializer in it
// replaced, and how many there were. s is not modified.
func withSchema(s serializers.Snapshot, schema string) (serializers.Snapshot, int) {
	if s.Kind == serializers.KindAvro {
		s.Schema = schema
		return s, 1
	}
	n := 0
	s.Args = slices.Clone(s.Args)
	for i := range s.Args {
		var k int
		s.Args[i], k = withSchema(s.Args[i], schema)
		n += k
	}
	return s, n
}
