package serializers

import (
	"encoding/hex"
	"strings"
	"testing"
)

const openRequestSchema = `{
  "type": "record", "name": "OpenRequest", "namespace": "com.x",
  "fields": [
    {"name": "request_id", "type": "string"},
    {"name": "tenant_id", "type": "string"},
    {"name": "model", "type": "string"},
    {"name": "started_ts", "type": "long"},
    {"name": "prompt_tokens", "type": "int"}
  ]
}`

type OpenRequest struct {
	RequestID    string `avro:"request_id"`
	TenantID     string `avro:"tenant_id"`
	Model        string `avro:"model"`
	StartedTS    int64  `avro:"started_ts"`
	PromptTokens int32  `avro:"prompt_tokens"`
}

var sampleRequest = OpenRequest{
	RequestID: "r-1093", TenantID: "tenant-acme", Model: "gpt", StartedTS: 1700000000000, PromptTokens: 321,
}

// sessionSchema has maps at several depths, so its encoding depends on
// sorting.
const sessionSchema = `{
  "type": "record", "name": "Session", "namespace": "com.x",
  "fields": [
    {"name": "user", "type": "string"},
    {"name": "counts", "type": {"type": "map", "values": "long"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "nested", "type": {"type": "map", "values": {"type": "map", "values": "int"}}},
    {"name": "attrs", "type": ["null", {"type": "map", "values": "string"}], "default": null}
  ]
}`

type Session struct {
	User   string                      `avro:"user"`
	Counts map[string]int64            `avro:"counts"`
	Tags   []string                    `avro:"tags"`
	Nested map[string]map[string]int32 `avro:"nested"`
	Attrs  *map[string]string          `avro:"attrs"`
}

func sampleSession() Session {
	attrs := map[string]string{"os": "linux", "browser": "firefox", "lang": "en", "tz": "UTC"}
	counts := map[string]int64{}
	for _, c := range strings.Fields("books music films games garden tools toys food drinks sport travel art") {
		counts[c] = int64(len(c) * 7)
	}
	return Session{
		User:   "u-42",
		Counts: counts,
		Tags:   []string{"b", "a", "c"},
		Nested: map[string]map[string]int32{
			"x": {"q": 1, "p": 2, "r": 3},
			"a": {"z": -1, "y": -2},
			"m": {},
		},
		Attrs: &attrs,
	}
}

// nodeSchema is recursive: a linked list.
const nodeSchema = `{
  "type": "record", "name": "Node",
  "fields": [
    {"name": "value", "type": "long"},
    {"name": "next", "type": ["null", "Node"]}
  ]
}`

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
