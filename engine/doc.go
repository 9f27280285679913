// Package engine is stateproc's embeddable stream engine in the style of
// Apache Flink: jobs are Go code built from sources, KeyBy, keyed process
// functions with stable operator uids, broadcast streams and sinks. The
// runtime runs every operator as parallel subtasks (goroutines), routes
// records by key group, drives event-time timers from source watermarks,
// takes aligned checkpoints and savepoints, and restores them at another
// parallelism or on the other state backend.
//
// Keyed state itself lives in package state and its backends; the savepoint
// byte layout in package snapshotfmt.
package engine
