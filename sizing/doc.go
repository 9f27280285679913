// Package sizing answers how big a job's keyed state is and will be, on the
// heap backend and on Pebble, per subtask and task slot, what its
// checkpoints write, and which backend to choose: the library behind
// `stateproc size`.
//
// Its input is a Job, built either by MeasureSavepoint from a savepoint of
// any layout, read through savepoint.Source, or by Plan.Job from a plan
// file (ReadPlan) for a job
// that has not run yet. Project then applies a parallelism, a key count or
// scale, a change rate and a memory budget and returns a Report.
//
// Measuring a savepoint takes keys, entries and bytes per key group from
// the index, and streams a sample of each state (whole key groups from the
// first, up to a byte budget) to split an entry's bytes into key, namespace,
// map key, value, TTL timestamp and framing, to age TTL entries at a given
// time with ttl.Expired, and to count timers per key and set them against
// the job's time that the savepoint records (the timer leak rule, in
// timers.go). Counts from a sample are scaled and marked as estimates.
//
// Heap sizes come from a model of engine/heapbackend's Go objects
// (heapmodel.go), rounded as Go's allocator rounds them (alloc.go); its test
// loads states through the real backend and compares with runtime.MemStats.
// Pebble sizes are measured: the sample is restored into real
// engine/pebblebackend databases in a temporary directory, a part of about
// 16 MiB each, in parallel and beside the tally, and compacted
// (pebble.go). A plan without bytes per entry gets both from the layouts
// of the savepoint format and of the Pebble backend (plan.go).
//
// The package reads savepoints and writes only temporary Pebble databases;
// it knows nothing of the CLI, which renders its reports.
package sizing
