package gateway

// Kind tells the two event types apart.
type Kind uint8

const (
	RequestStarted   Kind = 1
	RequestCompleted Kind = 2
)

// Event is a RequestStarted or a RequestCompleted, as the gateway logs them.
// Events travel between operators as Go values and are never stored, so
// they have no schema.
type Event struct {
	Kind      Kind
	RequestID string
	TS        int64
	// Set on RequestStarted.
	TenantID     string
	Model        string
	PromptTokens int32
	// Set on RequestCompleted.
	LatencyMs        int32
	CompletionTokens int32
	Status           string
}

// Request statuses.
const (
	StatusOK        = "ok"
	StatusError     = "error"
	StatusAbandoned = "abandoned"
)

// OpenRequest is a request in flight: the value of RequestAssembler's
// `open` state.
type OpenRequest struct {
	RequestID    string `avro:"request_id"`
	TenantID     string `avro:"tenant_id"`
	Model        string `avro:"model"`
	StartedTS    int64  `avro:"started_ts"`
	PromptTokens int32  `avro:"prompt_tokens"`
}

const openRequestSchema = `{"type":"record","name":"OpenRequest","namespace":"stateproc.examples.gatewaymeter","fields":[
 {"name":"request_id","type":"string"},
 {"name":"tenant_id","type":"string"},
 {"name":"model","type":"string"},
 {"name":"started_ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"prompt_tokens","type":"int"}]}`

// RequestRecord is one billed request: what RequestAssembler emits and
// TenantCost keeps in `pending` until it can be priced.
type RequestRecord struct {
	RequestID string `avro:"request_id"`
	TenantID  string `avro:"tenant_id"`
	Model     string `avro:"model"`
	StartedTS int64  `avro:"started_ts"`
	// TS is when the request ended: its completion, or its deadline when
	// abandoned.
	TS               int64  `avro:"ts"`
	LatencyMs        int32  `avro:"latency_ms"`
	PromptTokens     int32  `avro:"prompt_tokens"`
	CompletionTokens int32  `avro:"completion_tokens"`
	Status           string `avro:"status"`
}

const requestRecordSchema = `{"type":"record","name":"RequestRecord","namespace":"stateproc.examples.gatewaymeter","fields":[
 {"name":"request_id","type":"string"},
 {"name":"tenant_id","type":"string"},
 {"name":"model","type":"string"},
 {"name":"started_ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"latency_ms","type":"int"},
 {"name":"prompt_tokens","type":"int"},
 {"name":"completion_tokens","type":"int"},
 {"name":"status","type":{"type":"enum","name":"RequestStatus","symbols":["ok","error","abandoned"]}}]}`

// before orders records as TenantCost prices them: by time, then by
// request id, a total order that does not depend on arrival.
func (r RequestRecord) before(o RequestRecord) bool {
	if r.TS != o.TS {
		return r.TS < o.TS
	}
	return r.RequestID < o.RequestID
}

// TenantTotal is a tenant's running total after one more priced request.
type TenantTotal struct {
	TenantID       string
	TS             int64
	USDMicrosTotal int64
}
