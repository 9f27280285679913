package serializers

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSnapshotString(t *testing.T) {
	req := must[Of[OpenRequest]](t)(Avro[OpenRequest](openRequestSchema))
	longs := must[Of[any]](t)(AvroGeneric(`{"type":"array","items":"long"}`))
	ts := must[Of[any]](t)(AvroGeneric(`{"type":"long","logicalType":"timestamp-millis"}`))
	for _, c := range []struct {
		s    Serializer
		want string
	}{
		{Int64(), "int64"},
		{List(Int64()), "list<int64>"},
		{Map(String(), Int64()), "map<string,int64>"},
		{TTL(req), "ttl<avro:com.x.OpenRequest>"},
		{Timer(String(), Window()), "timer<string,window>"},
		{Nullable(List(Bytes())), "nullable<list<bytes>>"},
		{longs, "avro:array"},
		{ts, "avro:timestamp-millis"},
	} {
		if got := c.s.Snapshot().String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
	if got := (Snapshot{Kind: KindAvro, Schema: "{"}).String(); got != "avro:(invalid schema)" {
		t.Errorf("bad schema: %q", got)
	}
	if got := (Snapshot{}).String(); got != "?" {
		t.Errorf("zero snapshot: %q", got)
	}
}

func TestSnapshotEqual(t *testing.T) {
	a := Map(String(), TTL(List(Int64()))).Snapshot()
	if !a.Equal(Map(String(), TTL(List(Int64()))).Snapshot()) {
		t.Fatal("equal snapshots differ")
	}
	for _, b := range []Snapshot{
		Map(String(), TTL(List(Int32()))).Snapshot(),
		Map(Int32(), TTL(List(Int64()))).Snapshot(),
		List(Int64()).Snapshot(),
		{Kind: KindMap, Args: []Snapshot{{Kind: KindString}}},
		{Kind: KindMap, Schema: "x", Args: a.Args},
	} {
		if a.Equal(b) || b.Equal(a) {
			t.Errorf("%v equals %v", a, b)
		}
	}
	if !(Snapshot{Kind: KindInt64, Args: []Snapshot{}}).Equal(Snapshot{Kind: KindInt64}) {
		t.Error("nil and empty Args differ")
	}
}

func TestSnapshotJSON(t *testing.T) {
	req := must[Of[OpenRequest]](t)(Avro[OpenRequest](openRequestSchema))
	s := Map(String(), TTL(req)).Snapshot()
	b := must[[]byte](t)(json.Marshal(s))
	want := `{"kind":"map","args":[{"kind":"string"},{"kind":"ttl","args":[{"kind":"avro","schema":{"type":"record","name":"OpenRequest",`
	if !strings.HasPrefix(string(b), want) {
		t.Fatalf("JSON %s\nwant prefix %s", b, want)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(s) {
		t.Fatalf("round trip gave %v, want %v", back, s)
	}
	// A hand-written manifest with spaces reads as the constructor's snapshot.
	var pretty Snapshot
	manifest := `{"kind": "ttl", "args": [{"kind": "avro", "schema": ` + openRequestSchema + `}]}`
	if err := json.Unmarshal([]byte(manifest), &pretty); err != nil {
		t.Fatal(err)
	}
	if !pretty.Equal(TTL(req).Snapshot()) {
		t.Fatalf("manifest read as %#v", pretty)
	}
	// A primitive schema is embedded as its JSON string.
	str := must[Of[any]](t)(AvroGeneric(`"string"`))
	if b := must[[]byte](t)(json.Marshal(str.Snapshot())); string(b) != `{"kind":"avro","schema":"string"}` {
		t.Fatalf("primitive schema: %s", b)
	}
	for _, bad := range []string{`{"kind":"int64","arg":[]}`, `{"kind":1}`, `[]`} {
		if err := json.Unmarshal([]byte(bad), &back); !errors.Is(err, ErrSnapshot) {
			t.Errorf("Unmarshal(%s) = %v, want ErrSnapshot", bad, err)
		}
	}
	if _, err := json.Marshal(Snapshot{Kind: KindAvro, Schema: "{"}); !errors.Is(err, ErrSnapshot) {
		t.Errorf("Marshal of a schema that is not JSON: %v", err)
	}
}
