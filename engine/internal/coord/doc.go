// Package coord is the coordinator of the engine's checkpoints: it
// triggers periodic checkpoints and serves savepoint requests, pauses the
// sources at a rendezvous and places each checkpoint's epoch above what
// the keyed subtasks have read, collects every subtask's acknowledgement,
// completes and publishes the checkpoint through the checkpoint store
// (chkstore), and decides how the job ends. It knows the subtasks only as
// a Subtask (a role and, for sources, where their commands go) and the job
// only through a Config the engine builds for each run attempt; it imports
// nothing of the engine, and job code never sees it.
package coord
