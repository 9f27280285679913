// Package storage is where a savepoint's files live, and the one place that
// knows about buckets. It sits under every reader and writer of savepoints
// (snapshotfmt, the commands, the engine's checkpoints): they address files
// by relative names and never touch a path or a bucket themselves.
//
// # Locations
//
// ParseLocation, OpenDir and OpenTarget take a location string: a plain
// path or file:///path for a local directory, s3://bucket/prefix,
// gs://bucket/prefix or azblob://container/prefix for a bucket. Bucket
// credentials and endpoints come the way each cloud's SDK finds them
// (environment, shared config, instance roles), plus the URL parameters
// gocloud accepts, such as ?endpoint=…&region=…&use_path_style=true for an
// S3-compatible server, or ?domain=…&protocol=http&localemu=true for
// Azurite. GCS is reached through a small client of this package over
// GCS's JSON API (gcs.go), a gocloud driver: Application Default
// Credentials, STORAGE_EMULATOR_HOST for an emulator, ?anonymous=true for a
// public bucket; Google's SDK would link gRPC and telemetry packages whose
// initialisation every command would pay. Azure Blob Storage is reached
// the same way, through a small client over its REST API (azure.go):
// Shared Key signing with AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, a
// SAS token (AZURE_STORAGE_SAS_TOKEN) or a connection string
// (AZURE_STORAGE_CONNECTION_STRING), read as gocloud's Azure driver reads
// them, else a Microsoft Entra ID token found as the Azure SDK's
// DefaultAzureCredential finds one (azure_token.go, azure_cert.go), without
// its libraries, whose initialisation every command would pay too. The S3
// client is built here so
// that its retries follow a RetryPolicy: exponential backoff with jitter, a
// fixed number of attempts, and only for throttling (503 SlowDown, 429),
// other 5xx and broken connections; the GCS and Azure clients hold to the
// same.
//
// # Local directories
//
// LocalDir opens files relative to the directory one path element at a
// time without following symbolic links, and refuses anything but a
// regular file before opening it (ErrNotRegular): a FIFO would block, a
// device or a link out of the savepoint would be read. Stage writes into a
// directory beside the target and renames it into place; with force it
// exchanges the two directories atomically where the OS can (Linux
// renameat2, macOS renamex_np), so that a reader sees the old savepoint or
// the new one at every instant, and elsewhere restores the old one at the
// next Stage if a run died between its two renames. Either way the old
// directory is then deleted.
//
// A LocalDir opens the directory itself once, at its first use, and opens
// every file relative to that descriptor until it is closed: a reader that
// read the old _metadata reads the old data files, never the new
// savepoint's. A file that is gone from the held directory once it is no
// longer the one at its path (compared by device and inode) fails with
// ErrChanged, as a replaced object in a bucket does, and not as a missing
// file, which would say that the savepoint is damaged. Where files cannot
// be opened relative to a descriptor (Windows), each is opened by its path
// and then checked to come from the directory first opened.
//
// # Reading a bucket
//
// A bucket File answers each ReadAt with one ranged GET, bound to the
// version of the object that Open saw (If-Match on S3 and Azure's ETag, the
// generation on GCS, size and time elsewhere): a replaced or removed object
// fails with ErrChanged rather than mixing versions. A body that breaks is
// resumed for the bytes still missing. Open asks for the size and version
// with a HEAD; OpenFirst, OpenHead and Preload take them from the answer to
// a GET of the object's first bytes, and OpenWindowed on S3 from a GET of
// its last ones (a suffix range), one round trip where there would be two.
// WithContext binds a file opened once to the context of each caller. Nothing reads a whole file unless
// asked to: readers ask for a segment's offset and length from the index.
// To hide latency, a reader lists the segments it will read as Ranges and
// reads them through Prefetch, which keeps several requests in flight and
// never holds more bytes than its budget (the block reader's 256 KiB
// windows cost one request each, a few milliseconds on versitygw; whole
// segments or chunks of a few MiB read at close to the link's speed, see
// BenchmarkRangedReads); ReadSize tells a reader which size suits a file.
// Workers that take segments one after another (a scan) read them through
// one ReadAhead instead, whose reads run on across the segments' ends
// within one budget, and adjacent segments shorter than a read are read
// in one request: a segment shorter than a read would otherwise leave its
// worker waiting for a request of its own at its start. A reader that
// reads a file in many small pieces it cannot list up front (a RocksDB
// table's blocks, located through its index) goes through Windowed, which
// serves them from a window that moves forward a request at a time, and
// opens it with OpenWindowed, whose open reads the tail a table's reader
// starts with. Sub is a directory inside another, read as the other is (a
// checkpoint's chk-<id> within the job's prefix).
// Subdirs lists the directories directly under a Dir, in one listing
// with a delimiter rather than of every object below. Counters count
// bytes and requests for progress output; CountersOf returns those of a
// Dir or Target.
//
// # Writing a bucket
//
// An object store cannot rename, so a bucket Target writes in place and
// makes the savepoint visible by writing _metadata last, in one PUT, with a
// condition: create-only (If-None-Match) without force; with force, only
// over the very version of _metadata that was there when the target was
// opened (If-Match, or the GCS generation). A savepoint exists exactly when
// its _metadata does; of two writers racing to one target, one publishes
// and the other gets ErrConflict. An export's marker, SuccessName, works
// the same way, and a prefix holding either kind of output is a target
// that exists for the other kind too.
//
// Data files are written in one of three ways:
//
//   - CreateNamed names a file after its bytes (stem, the 16 hex digits
//     of its content hash, XXH3-64, ext), hashed while written; a file of up to
//     8 MiB is held in memory and put under its name at Close in one
//     request, the bytes of a longer one go to a temporary object that is
//     copied to its name on the server at Close.
//     Writes stay byte-identical run after run, a leftover of a dead run
//     with the same name holds the same bytes, and a forced replacement
//     never overwrites a file the old _metadata still names. ComposeNamed
//     and CopyNamed do the same for a caller that has read the bytes and
//     named the file itself (the snapshot writer, which verifies what it
//     copies): no temporary, since the name is known before the upload.
//   - Create keeps the caller's name and writes it create-only: a name that
//     exists (a dead run's leftover, another writer's file) fails with
//     ErrConflict instead of being overwritten under a reader. It suits
//     fresh targets and files no savepoint shares.
//   - Copy and Compose copy untouched data on the server: a whole file with
//     a copy request, and ranges with UploadPartCopy where S3's rule allows
//     (every part but the last at least 5 MiB; shorter ranges, and the
//     bytes needed to top a part up, go through the client). Elsewhere
//     than S3, ranges go through the client. A copy is bound to the
//     version of its source that was opened (S3's
//     x-amz-copy-source-if-match, Azure's x-ms-source-if-match, GCS's
//     sourceGeneration): a source replaced or removed since fails it with
//     ErrChanged.
//   - StartClaimedCopy copies a whole file on S3 to the content name that
//     the source's own name claims, create-only, before the caller has
//     read a byte of it, so that the server copies while the caller reads
//     and verifies; the caller keeps the copy once the digest is checked,
//     or discards it, which deletes it only while it is still the object
//     the copy made (If-Match on the DELETE).
//
// A forced publish then deletes the files of the replaced savepoint that
// the new one does not use: those directly under its prefix (an object
// under a deeper prefix is another savepoint's, not the replaced one's; an
// export's files, which lie in its datasets' directories, are all its
// own, and so are those of an export that a savepoint replaces, whose
// marker goes first). A reader that opened the old _metadata before
// the replacement may find, on its next read, that the old _metadata or an
// old data file has changed or gone: it gets ErrChanged, never bytes of the
// new savepoint, and must start again. Files both savepoints use (same
// content name) stay readable throughout.
//
// A run that dies before its _metadata leaves data files no savepoint
// names, and perhaps temporary uploads: Orphans lists them (verify reports
// them) and RemoveOrphans removes those older than a minimum age, which
// spares the files of a run still writing. A removal holds a lease at the
// prefix (CleanupName) from its listing to its last delete, and sends no
// delete once it may have lost it; Publish waits while a live one is held
// and then checks that the content-named files of its run directly under
// the prefix are all there, since a file that a run wrote again after the
// listing saw its older copy has the age of that copy in the listing.
// Abort removes what only this run can own (its temporaries, create-only
// files and unconfirmed claimed copies) and leaves content-named files,
// which a concurrent writer of the same bytes may use, to RemoveOrphans.
//
// A Hold is a writer's exclusive hold of a location for as long as it
// writes there, for writers that, unlike a savepoint's, cannot be made
// safe by names and create-only writes alone (the engine's checkpoint
// root, where checkpoints are numbered and old ones deleted): on disk a
// lock on a file (LockFile), in a bucket the same kind of lease as a
// removal's, under another name, whose holder makes its writes and deletes
// under Under's deadline.
//
// # Tests
//
// The bucket tests run against real servers: versitygw for S3, with a
// fault-injecting proxy in front (throttling, connection resets, bodies cut
// midway, S3's part rule enforced), fake-gcs-server in process for GCS, and
// Azurite for Azure; see package storetest for how to install the two
// binaries. Without them the tests skip, except under CI. One conformance
// suite runs against all three; the S3 tests also kill writer processes at
// random points, stop the server mid-read and mid-write, and race writers.
package storage
