// Package discard has the sink the example jobs use when a run wants only
// the state it leaves in a savepoint.
package discard
