// Package extsort sorts more records than fit in memory, for the tools
// that write entries in an order other than the one they read them in:
// rescale and the rescale of Flink savepoints in flinkfmt/flinkrewrite,
// which move entries between key groups, and bootstrap, whose input comes
// in any order. It sits below them and knows no savepoint layout: a record
// is a class (a caller puts the key group and state in it), a key, a
// subkey (rescale's namespace; empty for the others) and a value, ordered
// by class, then key bytes, then subkey bytes.
//
// It works in two phases. A Spiller appends records, unsorted, to buckets
// (ranges of classes the caller chooses, sized to fit a sort chunk), all in
// one file, a buffer of a bucket at a time; each goroutine has its own.
// A Sorter then reads a bucket's spills in chunks that fit its memory
// budget, sorts each chunk, and either emits
// it (a bucket that fits in one chunk) or writes it as a sorted run; runs
// are combined by a k-way merge, in several passes when there are more
// than its fan-in. Records with equal class, key and subkey keep the order
// of the files given and, within a file, of their addition, so a caller
// may cut a long record into pieces that sort equal. SortRecords does both
// steps; Load (read and sort, or write the runs) and Emit (emit the chunk,
// or merge the runs) do them apart, so that a caller with two sorters loads
// the next bucket while it writes the one before.
//
// A caller whose records fit in memory may hand them over in a Spill's
// Data rather than a file.
//
// A chunk whose classes are dense is sorted by counting its classes and
// merging the ascending runs each class's records arrive in: a rescale's
// records come from sorted input segments, a few runs per class, so its
// sort is nearly linear; other chunks are sorted by comparison.
//
// Memory is bounded by the budget, plus the largest single record, which
// grows a chunk that could not hold it.
package extsort
