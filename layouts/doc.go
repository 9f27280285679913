// Package layouts opens a savepoint or checkpoint of any layout stateproc
// reads, as a savepoint.Source: it looks at the first bytes of the
// directory's _metadata and hands the directory to the layout that owns
// them. It sits above the layouts (package snapshotfmt, the engine's
// checkpoint reader) and below the tools, which open their input here and
// read it only through the seam.
//
// Today it reads stateproc savepoints and the engine's checkpoints,
// incremental ones included (whose keyed state lies in native Pebble
// databases beside the canonical metadata), and recognizes Apache Flink's
// metadata by its magic number, refusing it as not read yet. A new layout
// is one more entry in the list in layouts.go.
package layouts
