package serializers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
)

// Equal reports whether two snapshots are the same, field by field. Two Avro
// schemas that differ only in layout are not Equal; Check calls them
// compatible as is.
func (s Snapshot) Equal(o Snapshot) bool {
	if s.Kind != o.Kind || s.Schema != o.Schema || len(s.Args) != len(o.Args) || s.External != o.External {
		return false
	}
	for i := range s.Args {
		if !s.Args[i].Equal(o.Args[i]) {
			return false
		}
	}
	return true
}

// String describes the serializer for people: int64, list<string>,
// map<string,int64>, ttl<avro:com.x.OpenRequest>. An Avro schema shows as
// the full name of its named type, or its type.
func (s Snapshot) String() string {
	var b strings.Builder
	s.format(&b)
	return b.String()
}

func (s Snapshot) format(b *strings.Builder) {
	if s.External != nil {
		b.WriteString(s.External.String())
		return
	}
	if s.Kind == "" {
		b.WriteString("?")
	}
	b.WriteString(string(s.Kind))
	if s.Kind == KindAvro {
		b.WriteString(":")
		b.WriteString(avroLabel(s.Schema))
	}
	if len(s.Args) == 0 {
		return
	}
	b.WriteString("<")
	for i, a := range s.Args {
		if i > 0 {
			b.WriteString(",")
		}
		a.format(b)
	}
	b.WriteString(">")
}

func avroLabel(schema string) string {
	parsed, _, err := parseAvroSchema(schema)
	if err != nil {
		return "(invalid schema)"
	}
	if n, ok := parsed.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return logicalName(parsed)
}

// snapshotJSON is a snapshot in a job manifest. The Avro schema is embedded
// as JSON, not as a string holding JSON, so manifests stay readable.
type snapshotJSON struct {
	Kind     Kind            `json:"kind"`
	Schema   json.RawMessage `json:"schema,omitempty"`
	Args     []Snapshot      `json:"args,omitempty"`
	External json.RawMessage `json:"external,omitempty"`
}

// MarshalJSON writes {"kind":"avro","schema":{...}} or
// {"kind":"map","args":[...]}; an external snapshot as
// {"kind":"external","external":...}, as its serializer describes itself.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	j := snapshotJSON{Kind: s.Kind, Args: s.Args}
	if s.External != nil {
		b, err := s.External.MarshalJSON()
		if err != nil {
			return nil, err
		}
		j.External = b
	}
	if s.Schema != "" {
		if !json.Valid([]byte(s.Schema)) {
			return nil, snapshotErr("%s: schema is not JSON", s.Kind)
		}
		j.Schema = json.RawMessage(s.Schema)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes, refusing unknown fields. The
// schema is stored compacted, as the Avro constructors store it.
func (s *Snapshot) UnmarshalJSON(data []byte) error {
	var j snapshotJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	if j.Kind == KindExternal || len(j.External) > 0 {
		return snapshotErr("an external serializer is read from its own layout, not from JSON")
	}
	*s = Snapshot{Kind: j.Kind, Args: j.Args}
	if len(j.Schema) > 0 && !bytes.Equal(j.Schema, []byte("null")) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, j.Schema); err != nil {
			return fmt.Errorf("%w: %w", ErrSnapshot, err)
		}
		s.Schema = buf.String()
	}
	return nil
}
