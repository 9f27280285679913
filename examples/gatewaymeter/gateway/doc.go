// Package gateway is GatewayMeter, the seed's LLM-gateway metering job, in
// its stage-6 shape, with a seeded generator of its input.
//
// The job: RequestStarted and RequestCompleted events, keyed by request_id,
// meet in RequestAssembler (uid "assemble"), which keeps each request in
// flight as an OpenRequest in the `open` value state and emits one
// RequestRecord per request: when it completes, or, through an event-time
// timer five minutes after it started, as abandoned. Records, keyed by
// tenant_id, go to TenantCost (uid "tenant-cost"), which prices them with
// the price table broadcast from a second source (uid "prices") and keeps a
// running total per tenant in integer micro-dollars (`usd_total`).
//
// The leak variant is the job before the timer existed (the seed's stage 3,
// with a TTL): abandoned requests leave their `open` entries behind, and
// since nothing reads them, nothing removes them.
//
// Every output is independent of scheduling and parallelism, on either
// clock. RequestAssembler treats a completion that comes at or after the
// deadline exactly as the timer would, so it does not matter which of the
// two the subtask sees first; TenantCost prices a record only once the
// watermark, which includes the price stream's, has passed the record's
// time, in (time, request_id) order, with the price version in force at
// that time. The TTL timestamps of `open` are processing times; under
// engine.DeterministicTime, which the example command and the savepoint
// generators use, they are watermarks, and the same seed and flags give
// byte-identical savepoints at a given parallelism.
package gateway
