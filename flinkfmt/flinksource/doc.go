// Package flinksource puts Apache Flink's savepoints and checkpoints
// behind the toolkit's read seam: a savepoint.Source over package flinkfmt,
// so that every read command takes a Flink directory as it takes a
// stateproc savepoint. It sits in the format layer beside flinkfmt, which
// does the reading; package layouts opens it by the magic of _metadata.
//
// The model it gives:
//
//   - an operator per operator of the metadata, named by its uid where the
//     metadata records one (version 5 on) and by its 32-digit hex ID
//     otherwise; ID always holds the hex ID, and Metadata.IDOf derives it
//     from a uid by Flink's uid hash, so that --operator takes either;
//   - the keyed states of the keyed-stream headers, and their timer
//     services (priority-queue states) as timer services; key, namespace,
//     map-key and value serializers are external snapshots (KindExternal)
//     holding a Serializer restored by flinkfmt/typeser. A state's value
//     serializer is that of one stored value: a TTL state's values keep
//     Flink's last-access timestamp inside them (Flink does not record the
//     TTL itself), and a map state's values start with Flink's null flag;
//   - operator list, union and broadcast state, the splits of a source
//     reader's SourceReaderState decoded into records;
//   - Segments counted from the entries (Flink keeps no index), once per
//     operator, ranges of key groups on every core, most entries from
//     their figures alone (flinkfmt's NextFigures: key, bytes, value
//     size), distinct keys by a comparison with the key before while they
//     ascend, as RocksDB writes them, and by a set of the key group's keys
//     once they do not; and Entries streamed key group by key group (after
//     the count, one state's entries are read from its own bytes only;
//     value sizes come in batches without building entries); CountSegments,
//     for a tool that reads every entry anyway, gives each segment's
//     entries (and value sizes, from the figures) from the read that
//     counts them; WalkSegments, for a savepoint in a bucket, starts the
//     next segments' reads ahead of the workers that read segments one by
//     one after the count (savepoint.StartAhead), priming each iteration
//     (its first read, without taking an entry) so that the workers get
//     the iterators themselves, with their value sizes in batches;
//   - what cannot be read in Operator.Unread (the changelog layout, channel
//     state), what is not read in Notes, and the bytes a heap key group
//     cannot be walked past in Warnings.
//
// Keys are hashed to key groups as Flink does (keygroup.FlinkHashCode):
// the key serializer implements serializers.KeyGrouper for the key types
// whose Java hashCode is defined by value.
package flinksource
