// Package sessions is SessionFeatures, the per-user session features job of
// the seed on Flink's state architecture, with a seeded generator of its
// clickstream.
//
// Keyed by user_id (uid "session-features"), it keeps the user's open
// session in the `session` value state and a count of clicks per product
// category in the `category-counts` map state, whose entries expire seven
// days after their last write. One event-time timer per user, moved forward
// on every click, closes the session after 30 minutes of inactivity and
// emits a SessionSummary.
//
// Results do not depend on when the watermark arrives: a click that comes
// 30 minutes or more after the session's last one closes the session
// exactly as the timer would, so the sessions are the same whichever of the
// two the subtask sees first, at any parallelism and on either clock. The
// TTL timestamps of `category-counts` are processing times; under
// engine.DeterministicTime, which the example command uses, they are
// watermarks and the savepoints are reproducible.
package sessions
