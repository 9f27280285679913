// Package bootstrap makes a savepoint from data: the state a new job starts
// from (loaded from a database dump, say), or a fix-up of bad state
// (exported, corrected, and loaded back), as Apache Flink's State
// Processor API writes one. It implements `stateproc bootstrap`, and is a
// Go API for doing the same from code.
//
// # From code
//
// A Builder is made from the job's manifest (what a built job prints with
// -manifest, or job.Manifest()): the savepoint has the job's operators at
// their parallelism and max parallelism, with the job's serializers, TTL
// configurations and timer services, every state empty until entries are
// added. Entries are Go values in the untyped view of package serializers,
// added from iterators:
//
//	b, err := bootstrap.New(job.Manifest(), bootstrap.Options{Out: dst, Now: now})
//	defer b.Close()
//	err = bootstrap.Values(ctx, b, "tenant-cost", "usd_total", maps.All(totals))
//	err = bootstrap.Timers(ctx, b, "assemble", "event-time", deadlines)
//	err = b.Add(ctx, "tenant-cost", "pending", entries) // namespaces, TTL times
//	summary, err := b.Commit(ctx)
//
// Values, Lists, Maps, Timers, OperatorState and Broadcast take an
// iter.Seq2 of keys and values; Add takes Entry values, which also carry a
// namespace, a map key, a TTL last-modified time or an operator state's
// subtask. A TTL entry without a time of its own is stamped with
// Options.Now, which is also the savepoint's creation time.
//
// # From datasets
//
// Load reads the layout export writes (package export): one directory per
// operator and state, of Parquet, Arrow IPC or JSON lines files, with the
// columns export names: key, namespace (window_start and window_end for a
// window), map_key, index, value, ttl_last_modified, timestamp, subtask.
// key_group and expired are derived, and recomputed: key groups at the
// job's max parallelism, so that loading an export into a job of another
// max parallelism rescales it. A column's type need not be the one export
// writes, only able to hold the serializer's values (package
// bootstrap/internal/encode says what converts). A list state's elements,
// and an operator state's, are ordered by index when the column is there
// and in the order they are read otherwise; an operator state's element
// goes to its subtask modulo the job's parallelism.
//
// # Bad data
//
// Nothing is written unless every row is good. A row whose key or value
// does not fit its serializer, or an entry given twice (a second value for
// a key of a value state, a repeated map key, list index, timer or
// broadcast key) is a *RowError naming the file, the row and the column
// (and the place within it: value.versions[1].effective_from); a bootstrap
// reports up to Options.MaxBadRows of them as one *BadRows error, and
// commits nothing. A column whose type cannot hold its serializer's values
// is reported once, for its file. All of them wrap ErrBadData.
//
// # Memory
//
// Keyed entries are encoded as they are read and written, unsorted, to
// spill files beside the target, one per bucket of key groups of an
// operator and per worker (internal/extsort). Commit sorts the buckets in
// turn by (key group, state, key, namespace, ...) within Options.Memory,
// in sorted runs and a merge when a bucket does not fit it, so memory
// does not grow with the data. The sorted stream is written straight into the data files of the engine's layout,
// one per subtask of each keyed operator, segment by segment: a bootstrap
// of an export of an engine's savepoint, into the same job, writes data
// files byte for byte like the engine's. Operator and broadcast state are
// held in memory: the savepoint's metadata holds them anyway.
//
// The package sits in the tools layer and writes the savepoint format
// through package rewrite, which gives it the target's lock, the staging
// directory renamed into place on success, and the writer.
package bootstrap
