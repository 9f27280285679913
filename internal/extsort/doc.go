// Package extsort sorts byte records that need not fit in memory: an
// external merge sort within a fixed memory budget.
//
// Records are gathered into chunks, each a share of the budget. Several
// writers, one per goroutine, fill chunks at once; a full chunk is sorted by
// the writer that filled it and written to a run file, and a writer that is
// done hands its chunk, partly filled, to the next. Sorted merges the run
// files and the chunks still in memory with a heap, in several passes when
// there are more runs than its fan-in, and streams the records in order.
// Nothing spills when everything fits: small inputs never touch the disk.
//
// Memory is the budget, plus a read buffer per run being merged, plus any
// single record larger than a chunk (a chunk grows to hold it). Run files
// are this package's own and are removed by Close; a record read back is
// checked against the longest one written, so a damaged run file is an
// error, not an allocation.
//
// Records that compare equal come out in an unspecified order: a caller
// that needs a deterministic order makes its comparison total (a sequence
// number as the last key does).
//
// It is the sort of package bootstrap, whose input comes in any order.
// rescale keeps its own, which exploits that its input is already sorted
// within each old key group.
package extsort
