package gateway

import (
	"slices"
	"strings"
)

// Records lists every request of the input as the job bills it, computed
// from the generator alone: completed requests at their completion, and, in
// the stage-6 job, abandoned ones at their deadline. Tests compare the job
// with it.
func (s *Source) Records() []RequestRecord {
	var out []RequestRecord
	for split := range s.plans {
		for j := int64(0); j < s.plans[split].requests(); j++ {
			r := s.request(split, j)
			st := s.started(r)
			rec := RequestRecord{RequestID: st.RequestID, TenantID: st.TenantID, Model: st.Model, StartedTS: st.TS, PromptTokens: st.PromptTokens}
			if r.abandoned {
				if s.leak {
					continue
				}
				rec.TS = st.TS + AbandonAfter.Milliseconds()
				rec.LatencyMs = int32(AbandonAfter.Milliseconds())
				rec.Status = StatusAbandoned
			} else {
				c := s.completed(r.index, s.completedAt(r))
				rec.TS, rec.LatencyMs, rec.CompletionTokens, rec.Status = c.TS, c.LatencyMs, c.CompletionTokens, c.Status
			}
			out = append(out, rec)
		}
	}
	return out
}

// ExpectedTotals computes, from the generator alone, the TenantTotals the
// job emits over the whole input when it drains at the end: each tenant's
// records in (time, request_id) order, priced with the version in force at
// their time, as running totals.
func (s *Source) ExpectedTotals() []TenantTotal {
	table := map[string]ModelPrices{}
	for _, u := range s.PriceUpdates() {
		table[u.Model] = table[u.Model].with(u)
	}
	recs := s.Records()
	slices.SortFunc(recs, func(a, b RequestRecord) int {
		switch {
		case a.TenantID != b.TenantID:
			return strings.Compare(a.TenantID, b.TenantID)
		case a.before(b):
			return -1
		}
		return 1
	})
	out := make([]TenantTotal, 0, len(recs))
	var total int64
	for i, r := range recs {
		if i == 0 || recs[i-1].TenantID != r.TenantID {
			total = 0
		}
		v, _ := table[r.Model].at(r.TS)
		total += costMicros(r, v)
		out = append(out, TenantTotal{TenantID: r.TenantID, TS: r.TS, USDMicrosTotal: total})
	}
	return out
}
