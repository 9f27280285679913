// Package pipelines runs stateproc's export, prune-ttl, verify, inspect
// --scan and rescale as Apache Beam pipelines, for savepoints that outgrow one machine: on
// Dataflow, on Flink or Spark through the portable runners, and on Prism
// locally and in the tests.
//
// It lives in a module of its own, so that the stateproc module and its
// command stay free of Beam's dependencies, and it reimplements nothing:
// each pipeline's map stage calls, per shard, the function the CLI calls
// with --shard I/N (package shard plans the shards from the savepoint's
// index), and reads and writes through the project's storage layer
// (ranged reads on S3, GCS, Azure and local files), never Beam's file IO.
// The writing pipelines end in the commit step the CLI's commit command
// runs, which writes _metadata last, so a pipeline writes the savepoint or
// export a single run of the CLI writes.
//
//   - Export: map only, one export part per shard, then the commit that
//     numbers each dataset's files in shard order.
//   - PruneTTL: map only, one part per shard, then the commit.
//   - Verify: map, then a combine of the shards' figures.
//   - Inspect: map (inspect.ScanShard), then a combine of the shards'
//     scan parts (inspect.ScanPart.Merge) into the CLI's report.
//   - Rescale: the one shuffle; see Rescale.
package pipelines
