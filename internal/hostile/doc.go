// Package hostile crafts savepoints that a reader must refuse, byte by byte
// from snapshotfmt/FORMAT.md rather than through the writer (which refuses
// to write them): well-formed files with valid checksums whose lengths,
// counts, orders, key groups, zstd payloads, names, links or schemas are
// wrong. Corpus is the hostile corpus that internal/hostilegen writes to
// testdata/hostile and that the CLI's tests run every command over;
// Reseal recomputes every checksum of a savepoint after a change, which is
// what lets a fuzz test mutate whole savepoints below the checksum layer.
// It sits in the format layer, beside the layout it attacks; only tests and
// the generator use it.
package hostile
