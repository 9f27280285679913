// Package rescale implements `stateproc rescale`: a rewrite of a savepoint
// to a new max parallelism, moving every keyed entry (state values, list
// elements, map entries and timers) to the key group its key bytes hash to
// under the new max parallelism, without the job's code.
//
// # Algorithm
//
// A key group under max parallelism M holds the keys whose hash h has
// h mod M = g; under M' the same key belongs to h mod M'. Every input
// segment (one state in one old key group) is already sorted by (key,
// namespace), and all of a key's entries lie in one old key group, so the
// entries of a new key group are a mix of disjoint sorted runs, one per
// contributing old key group. The rewrite works in two phases:
//
//  1. Partition. Workers stream the old segments (each segment read once,
//     in any order) and spill each group (the entries of one key group,
//     state, key and namespace, kept together so list order and map-key
//     order need no comparison; or one timer) as one internal/extsort
//     record whose class is its new key group and state, to its bucket: a
//     bucket is a range of new key groups within one new subtask, sized
//     from the index to fit a sort chunk (there are at most 256, so beyond
//     a few gigabytes a bucket takes several chunks), and each worker has
//     one spill file, into which its buckets' write buffers are appended
//     as they fill (the file is removed with the operator's spill
//     directory). A group is taken from the input record by record, its
//     items as the block frames them, without decoding them into entries;
//     a record that continues in the next block is spilled as two pieces. An operator whose records fit in the write
//     buffers' share of the memory budget keeps them in memory instead.
//  2. Sort and write. For each new subtask, one data file in the engine's
//     layout, its buckets are taken in order and sorted by internal/extsort
//     by (key group, state, key, namespace), or (key group, timer service,
//     time, key, namespace) for timers: a counting sort by class, then a
//     merge of the ascending runs each class already consists of, one per
//     contributing input segment; a bucket larger than the memory budget
//     is written as sorted runs that a k-way merge combines. The sorted
//     groups' items are appended to the output as the input framed them,
//     a group at a time (snapshotfmt's SegmentWriter.AppendItems). Each
//     writer has two sorters: a goroutine loads and sorts the next bucket
//     into one while the bucket before is written from the other.
//
// When one max parallelism divides the other by a small factor, there is
// nothing to sort: a new key group is either the merge of a few whole old
// ones (fewer key groups) or the keys of one old key group that hash to it
// (more), both already in order. Each new subtask's file is then written
// straight from the input segments, without the spill (see direct.go). In
// a bucket the segments are read ahead of the writer, in the order it
// takes them, through one walk for each old key group a merge takes, so
// that it does not wait a round trip for each segment.
//
// The output is what the engine would have written at the new max
// parallelism: the same data files, byte for byte, when the input came
// from the engine.
//
// # Memory
//
// Memory does not depend on the size of the savepoint: the partition phase
// holds one input block per worker and a bounded write buffer per bucket
// file (or, for an operator that small, its spill records: at most half the
// budget); the sort phase holds two chunks per worker (Options.Memory split
// among them) plus, in a merge, one read buffer per run. A single entry
// larger than a chunk grows that chunk to hold it, so beyond the fixed
// budget memory is bounded by the largest single value (which the format
// bounds by its 256 MiB block limit). The direct path holds, per writer,
// the reads of the few input segments it merges and one output block; in
// a bucket its walks hold together what one walk of a scan holds.
//
// Operators whose max parallelism does not change are copied as opaque
// bytes in the input's layout, with only their parallelism changed in the
// metadata if asked; non-keyed operators are carried over as they are.
// The output does not depend on the number of workers or the memory
// budget.
package rescale
