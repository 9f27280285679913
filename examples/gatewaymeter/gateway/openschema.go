package gateway

import (
	"fmt"
	"math"

	"github.com/stateproc/stateproc/serializers"
)

// OpenRequest v2 is the schema-evolution example of stateproc check and
// migrate: prompt_tokens promoted from int to long, and cached_tokens, the
// prompt tokens served from the provider's cache, added with a default of 0.
// Savepoints of the v1 job migrate to it: the new field takes its default
// and each token count is read as a long.
const openRequestSchemaV2 = `{"type":"record","name":"OpenRequest","namespace":"stateproc.examples.gatewaymeter","fields":[
 {"name":"request_id","type":"string"},
 {"name":"tenant_id","type":"string"},
 {"name":"model","type":"string"},
 {"name":"started_ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"prompt_tokens","type":"long"},
 {"name":"cached_tokens","type":"long","default":0}]}`

// openRequestV2 is an `open` value as the v2 schema stores it.
type openRequestV2 struct {
	RequestID    string `avro:"request_id"`
	TenantID     string `avro:"tenant_id"`
	Model        string `avro:"model"`
	StartedTS    int64  `avro:"started_ts"`
	PromptTokens int64  `avro:"prompt_tokens"`
	CachedTokens int64  `avro:"cached_tokens"`
}

// UseOpenSchema chooses the schema that jobs built afterwards store `open`
// values with: "v1", the job's own, or "v2". The job keeps working on
// OpenRequest either way; under v2 it stores no cached tokens and refuses
// a prompt token count beyond int32. It is meant for the example command,
// before it builds the job.
func UseOpenSchema(version string) error {
	switch version {
	case "v1":
		openRequestSerializer = mustAvro[OpenRequest](openRequestSchema)
	case "v2":
		openRequestSerializer = openV2{mustAvro[openRequestV2](openRequestSchemaV2)}
	default:
		return fmt.Errorf("gateway: unknown OpenRequest schema %q (v1 or v2)", version)
	}
	return nil
}

// openV2 stores OpenRequest values with the v2 schema.
type openV2 struct{ v2 serializers.Of[openRequestV2] }

func (s openV2) Snapshot() serializers.Snapshot { return s.v2.Snapshot() }

func (s openV2) Append(dst []byte, r OpenRequest) ([]byte, error) {
	return s.v2.Append(dst, openRequestV2{RequestID: r.RequestID, TenantID: r.TenantID, Model: r.Model, StartedTS: r.StartedTS, PromptTokens: int64(r.PromptTokens)})
}

func (s openV2) Decode(src []byte) (OpenRequest, error) {
	v, err := s.v2.Decode(src)
	if err != nil {
		return OpenRequest{}, err
	}
	if v.PromptTokens < math.MinInt32 || v.PromptTokens > math.MaxInt32 {
		return OpenRequest{}, fmt.Errorf("%w: gateway: prompt_tokens %d does not fit the job's int32", serializers.ErrDecode, v.PromptTokens)
	}
	return OpenRequest{RequestID: v.RequestID, TenantID: v.TenantID, Model: v.Model, StartedTS: v.StartedTS, PromptTokens: int32(v.PromptTokens)}, nil
}

func (s openV2) AppendAny(dst []byte, v any) ([]byte, error) {
	r, ok := v.(OpenRequest)
	if !ok {
		return dst, fmt.Errorf("%w: gateway: want an OpenRequest, got %T", serializers.ErrEncode, v)
	}
	return s.Append(dst, r)
}

func (s openV2) DecodeAny(src []byte) (any, error) { return s.Decode(src) }
