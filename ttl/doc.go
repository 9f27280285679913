// Package ttl holds the state time-to-live configuration and the single expiry
// rule that the engine, inspect, export and prune-ttl all call.
//
// TTL runs on processing time only. Timestamps are milliseconds since the Unix
// epoch. An entry with last-modified time t and TTL d is expired at now when
// t + d <= now, where t + d saturates at the largest time.
package ttl
