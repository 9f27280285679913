package gateway

import (
	"fmt"
	"strconv"
	"time"

	"github.com/stateproc/stateproc/examples/internal/detgen"
)

// Splits is the number of splits of the event source: fixed, like the
// partitions of a topic, so that a savepoint taken at one parallelism
// restores at any other.
const Splits = 8

// Shape of the generated traffic.
const (
	// Epoch is the event time of the first request, 2026-01-01T00:00:00Z.
	Epoch int64 = 1767225600000
	// StartEvery is the time in milliseconds between two request starts,
	// over all splits; each start is jittered within it.
	StartEvery = 20
	// AbandonPerMyriad is the share of abandoned requests, in 1/10000.
	AbandonPerMyriad = 200
	MinLatencyMs     = 100
	MaxLatencyMs     = 20_000
	// Tenants is the number of tenants; the first HeavyTenants of them get
	// HeavyPerMille of the requests between them, the rest share the others.
	Tenants       = 200
	HeavyTenants  = 5
	HeavyPerMille = 400
)

// quietGap separates the leak variant's last request per split from the
// rest: one TTL of `open` and a minute, so that at the end of the input
// every leaked entry is past its TTL.
const quietGap = int64(OpenTTL/time.Millisecond) + 60_000

// Independent draws per request.
const (
	fieldJitter detgen.Field = iota + 1
	fieldAbandon
	fieldLatency
	fieldTenant
	fieldModel
	fieldPrompt
	fieldCompletion
	fieldStatus
)

var tenantIDs = func() []string {
	ids := make([]string, Tenants)
	for i := range ids {
		ids[i] = fmt.Sprintf("tenant-%03d", i)
	}
	return ids
}()

// Models served by the gateway.
const (
	ModelA = "model-a"
	ModelB = "model-b"
)

// splitPlan is what a split holds. Request i belongs to split i % Splits;
// local request j of split s is request s + j*Splits. The split's events
// come from `body` requests, of which the last is abandoned if that is what
// makes the count exact (forced), and, in the leak variant, one more
// request after the quiet gap (tail).
type splitPlan struct {
	body      int64
	forced    bool
	tail      bool
	abandoned int64
}

func (p *splitPlan) requests() int64 {
	if p.tail {
		return p.body + 1
	}
	return p.body
}

// request is one generated request: its global index, its start time and
// whether it is abandoned. Its other fields are drawn from the index when
// needed.
type request struct {
	index     int64
	start     int64
	abandoned bool
}

func (s *Source) drawnAbandoned(i int64) bool {
	return detgen.Below(s.seed, uint64(i), fieldAbandon, 10000) < AbandonPerMyriad
}

// planSplit finds how many requests split s needs for exactly target events.
// Each request adds one event (abandoned) or two; when the last one
// overshoots by one, it is made abandoned.
func (s *Source) planSplit(split int, target int64) splitPlan {
	p := splitPlan{tail: s.leak}
	if p.tail {
		target -= 2
	}
	var events int64
	for events < target {
		events++
		if s.drawnAbandoned(int64(split) + p.body*Splits) {
			p.abandoned++
		} else {
			events++
		}
		p.body++
	}
	if events > target {
		p.forced = true
		p.abandoned++
	}
	return p
}

// request returns local request j of split.
func (s *Source) request(split int, j int64) request {
	p := &s.plans[split]
	i := int64(split) + j*Splits
	r := request{index: i, start: Epoch + i*StartEvery + int64(detgen.Below(s.seed, uint64(i), fieldJitter, StartEvery))}
	switch {
	case j >= p.body:
		r.start += quietGap
	case j == p.body-1 && p.forced:
		r.abandoned = true
	default:
		r.abandoned = s.drawnAbandoned(i)
	}
	return r
}

// latency is skewed towards short requests: the square of a uniform draw,
// scaled to [MinLatencyMs, MaxLatencyMs).
func (s *Source) latency(i int64) int64 {
	u := detgen.Below(s.seed, uint64(i), fieldLatency, 1_000_000)
	return MinLatencyMs + int64(u*u*(MaxLatencyMs-MinLatencyMs)/1_000_000_000_000)
}

func (s *Source) completedAt(r request) int64 { return r.start + s.latency(r.index) }

func requestID(i int64) string { return "r-" + strconv.FormatInt(i, 10) }

func (s *Source) tenant(i int64) string {
	h := detgen.Hash(s.seed, uint64(i), fieldTenant)
	if h%1000 < HeavyPerMille {
		return tenantIDs[(h/1000)%HeavyTenants]
	}
	return tenantIDs[HeavyTenants+(h/1000)%(Tenants-HeavyTenants)]
}

func (s *Source) model(i int64) string {
	if detgen.Below(s.seed, uint64(i), fieldModel, 100) < 60 {
		return ModelA
	}
	return ModelB
}

func (s *Source) started(r request) Event {
	return Event{
		Kind:         RequestStarted,
		RequestID:    requestID(r.index),
		TS:           r.start,
		TenantID:     s.tenant(r.index),
		Model:        s.model(r.index),
		PromptTokens: int32(detgen.Between(s.seed, uint64(r.index), fieldPrompt, 50, 4000)),
	}
}

func (s *Source) completed(i, ts int64) Event {
	status := StatusOK
	if detgen.Below(s.seed, uint64(i), fieldStatus, 100) == 0 {
		status = StatusError
	}
	return Event{
		Kind:             RequestCompleted,
		RequestID:        requestID(i),
		TS:               ts,
		LatencyMs:        int32(s.latency(i)),
		CompletionTokens: int32(detgen.Between(s.seed, uint64(i), fieldCompletion, 10, 2000)),
		Status:           status,
	}
}
