// Package layouts opens a savepoint or checkpoint of any layout stateproc
// reads, as a savepoint.Source: it looks at the first bytes of the
// directory's _metadata and hands the directory to the layout that owns
// them. It sits above the layouts (package snapshotfmt, the engine's
// checkpoint reader) and below the tools, which open their input here and
// read it only through the seam.
//
// It reads stateproc savepoints and the engine's checkpoints, incremental
// ones included (whose keyed state lies in native Pebble databases beside
// the canonical metadata), and Apache Flink's savepoints and checkpoints,
// recognized by the magic number of their metadata and read through
// package flinkfmt/flinksource; a Flink checkpoint's chk-<id> directory
// beside its job's shared/ directory, on disk or in a bucket, is read with
// the files it shares, and the job's directory itself as its newest
// checkpoint (flink.go). Options.PathMap says where the absolute paths of
// a Flink _metadata lie now, a bucket included; the directories it names
// are opened once each and closed with the source. A new layout is one
// more case in open, in layouts.go.
//
// OpenLocation opens a savepoint by location, a bucket URL included
// (package storage). In a bucket, where each request is a round trip,
// opening reads a _metadata of up to 16 MiB whole, once, in one ranged GET
// that also gives its size and version, while it looks for an incremental
// checkpoint's manifest beside it; a stateproc savepoint then opens its data files when first
// read, so that reading the index costs that one object.
package layouts
