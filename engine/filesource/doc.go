// Package filesource is a source of the engine that reads a directory of
// JSON-lines or CSV files, one record per line.
//
// It sits on the engine's public API, as engine/window does: a job adds it
// with engine.FromSource. The files, in name order, are cut into splits of
// fixed byte ranges; a split reads every line whose first byte lies in its
// range, the last of them to its end past the range if need be, as Hadoop's
// and Flink's file splits do, so that no line is read twice or lost. The
// position in every split is a byte offset, kept in the source's operator
// state through engine.PositionReader, and every split's identity (file
// name, byte range, the file's size and a checksum of its head) beside it,
// through engine.SplitIdentifier, so that a restore refuses a directory
// whose files have changed rather than resume one file at another's offset.
package filesource
