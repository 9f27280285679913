// Package spgen writes synthetic savepoints for the tests of the rewrite
// commands: every shape of keyed state (TTL value, TTL map, namespaced list,
// windowed reducing state, timers) under string and int64 keys, operator
// and broadcast state, in the engine's layout (one data file per operator
// subtask, segments in key-group and ref order), deterministic for a seed,
// and as large as a test asks.
package spgen
