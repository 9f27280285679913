package gateway

import "strconv"

// FormatTotal is the file sinks' line for a TenantTotal:
// tenant_id,ts,usd_micros_total.
func FormatTotal(v TenantTotal, _ int64) ([]byte, error) {
	b := append([]byte(v.TenantID), ',')
	b = strconv.AppendInt(b, v.TS, 10)
	b = append(b, ',')
	return strconv.AppendInt(b, v.USDMicrosTotal, 10), nil
}

// FormatRecord is the file sinks' line for a RequestRecord:
// request_id,tenant_id,model,started_ts,ts,latency_ms,prompt_tokens,completion_tokens,status.
func FormatRecord(v RequestRecord, _ int64) ([]byte, error) {
	b := append([]byte(v.RequestID), ',')
	b = append(append(b, v.TenantID...), ',')
	b = append(append(b, v.Model...), ',')
	for _, n := range []int64{v.StartedTS, v.TS, int64(v.LatencyMs), int64(v.PromptTokens), int64(v.CompletionTokens)} {
		b = append(strconv.AppendInt(b, n, 10), ',')
	}
	return append(b, v.Status...), nil
}
