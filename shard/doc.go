// Package shard cuts the work of a command over one savepoint into shards
// that independent tasks run: the N tasks of `--shard I/N` (a Kubernetes
// Indexed Job, a batch array) or the map stage of a pipeline. It sits
// among the tools, above the read seam and the rewrite framework, and below
// the CLI and the pipelines of the beam module, which both plan with it.
//
// A cut depends only on the savepoint's index, so every task computes the
// same one without talking to the others. Shards are contiguous runs of the
// order a single run works in (data files by name, segments by offset), cut
// at segment boundaries to about equal bytes, so that a shard reads its
// bytes with ranged reads through the same per-segment functions a single
// run calls, and the parts the writing shards produce, put back in shard
// order by the commit step (rewrite.Assemble), are byte for byte the files
// a single run writes: one file layout for every writer, and no format
// change.
package shard
