// Package extsort sorts more records than fit in memory, for the tools
// that write entries in an order other than the one they read them in:
// the rescale of Flink savepoints in flinkfmt/flinkrewrite, which moves
// entries between key groups, and bootstrap, whose input comes in any
// order. It sits below them and knows no savepoint layout: a record is a
// class (a caller puts the key group and state in it), a key and a value,
// ordered by class, then key bytes.
//
// It works in two phases. A Spiller appends records, unsorted, to one file
// per bucket (a range of classes the caller chooses, sized to fit a sort
// chunk); each goroutine has its own. A Sorter then reads a bucket's files
// in chunks that fit its memory budget, sorts each chunk, and either emits
// it (a bucket that fits in one chunk) or writes it as a sorted run; runs
// are combined by a k-way merge, in several passes when there are more
// than its fan-in. Records with equal class and key keep the order of the
// files given and, within a file, of their addition.
//
// Memory is bounded by the budget, plus the largest single record, which
// grows a chunk that could not hold it.
package extsort
