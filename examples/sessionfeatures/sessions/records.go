package sessions

// Click is one click of a user on a product of a category. Clicks travel
// between operators as Go values and are never stored, so they have no
// schema; the tags name the fields of a click in files the job reads.
type Click struct {
	UserID   string `json:"user_id" csv:"user_id"`
	Category string `json:"category" csv:"category"`
	TS       int64  `json:"ts" csv:"ts"`
}

// SessionAgg is a user's open session: the value of `session`.
type SessionAgg struct {
	StartTS int64 `avro:"start_ts"`
	LastTS  int64 `avro:"last_ts"`
	Clicks  int32 `avro:"clicks"`
}

const sessionAggSchema = `{"type":"record","name":"SessionAgg","namespace":"stateproc.examples.sessionfeatures","fields":[
 {"name":"start_ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"last_ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"clicks","type":"int"}]}`

// end is when the session closes without another click: the time of its
// timer.
func (s SessionAgg) end() int64 { return s.LastTS + SessionGap.Milliseconds() }

// SessionSummary is a closed session, the job's output.
type SessionSummary struct {
	UserID  string
	StartTS int64
	LastTS  int64
	Clicks  int32
}
