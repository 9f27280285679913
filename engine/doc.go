// Package engine is stateproc's embeddable stream engine in the style of
// Apache Flink: jobs are Go code built from sources, KeyBy, keyed process
// functions with stable operator uids (keyed state, and operator list state
// per subtask), broadcast streams and sinks. The
// runtime runs every operator as parallel subtasks (goroutines), routes
// records by key group, drives event-time timers from source watermarks,
// takes aligned checkpoints and savepoints, and restores them at another
// parallelism or on the other state backend.
//
// Keyed state itself lives in package state and its backends; the savepoint
// byte layout in package snapshotfmt.
//
// # Time
//
// Event time comes from the sources (Watermarks): a subtask's watermark is
// the lowest of its inputs', and its event-time timers fire when the
// watermark passes them, before the watermark goes downstream.
//
// Processing time is each subtask's own clock (RunOptions.ProcessingTime)
// and never runs backwards: the wall clock by default, the subtask's
// watermark under DeterministicTime, or a clock of the caller's. TTL runs on
// it everywhere: reads, the heap's incremental cleanup, the Pebble sweeper
// and full-snapshot cleanup at the barrier, so that cleanup never removes an
// entry a read by its own key at that time would still return. A timer's
// callback runs at the subtask's current processing time, not at the
// timer's own time, so state it writes is stamped like state the next
// record writes. A checkpoint records when it was taken (the latest
// processing time of its keyed subtasks at the barrier) and, apart, the
// watermark it had reached; each keyed subtask keeps its clock in the
// operator state "subtask-clock", and a restored subtask goes on from there.
//
// Under DeterministicTime a keyed subtask reads its inputs in watermark
// order: a channel whose watermark is ahead waits for the others, so every
// record and timer sees the watermark, and so the processing time, it would
// see in any other run. A checkpoint's barrier goes out on every source
// right after its first watermark at or above an epoch the coordinator
// chooses above every watermark already sent, which makes the checkpoint a
// cut through that order: a run restarted from it goes on as the run
// without the failure. StopAtWatermark stops there too. A source subtask
// none of whose splits has a record to give (each said
// ErrNothingAvailable) sends its barrier where it stands, as an idle or
// finished one does, so that a quiet input does not hold a checkpoint, or
// the savepoint a job stops with, until it speaks again.
//
// # Savepoints and checkpoints
//
// A savepoint is always canonical and self-contained: a directory in the
// snapshotfmt layout, the toolkit's input, whatever the backend. Run takes
// one when a bounded job stops (RunOptions.SavepointDir). Start returns a
// Handle to a job that runs until it is stopped: TriggerSavepoint takes
// one while the job runs, aligned with barriers as a checkpoint is, and
// StopWithSavepoint ends the job with one, as Flink's stop does: without
// drain the sources stop at its barrier and the event-time timers stay in
// it; with drain the largest watermark goes first and every timer fires.
// A job restored from a savepoint taken after its inputs ended starts its
// event time again, as Flink does, so that its timers fire on new input.
// Like a periodic checkpoint, a savepoint that is not a drain begins with
// the sources' rendezvous, so under DeterministicTime it cuts the input at
// an epoch and a job restored from it goes on as the job that took it.
//
// Checkpoints (RunOptions.CheckpointDir and CheckpointInterval) are the
// engine's own. A bounded job that stops without a savepoint ends with a
// final checkpoint, after which its sinks commit: a restart from the
// root's latest checkpoint finds the job's end, not a point before it
// whose output is already committed. The checkpoint root holds one directory per retained
// checkpoint and, for Pebble jobs, shared/: immutable files that several
// checkpoints reference. Every name a checkpoint records is relative to the
// root, so a root can be moved as a whole.
//
//	<root>/
//	  shared/
//	    count-0-3f9a1c2b7d4e5f60-000007.sst   <uid>-<subtask>-<db id>-<Pebble's file name>
//	    count-0-3f9a1c2b7d4e5f60-000012.sst
//	    count-1-9b0e44d2a1c37f85-000009.sst
//	  chk-7/
//	    _metadata                  canonical: operators, states, serializers,
//	                               operator and broadcast state
//	    _incremental.json          the Pebble subtasks' native checkpoints
//	    op001-00000/MANIFEST-000001        operator 1, subtask 0
//	    op001-00000/OPTIONS-000003
//	    op001-00000/marker.manifest.000001.MANIFEST-000001
//	    ...
//	    op001-00001/...
//	  chk-8/
//	    ...
//
// A heap job's checkpoints are canonical, like savepoints: their keyed
// state is in data files (op001-00000-<16 hex digits>.data, named after
// their bytes) beside _metadata. On Pebble, the
// periodic checkpoints are incremental: each keyed subtask flushes its
// database and takes a native checkpoint of it (pebblebackend's
// Backend.Checkpoint). Its sstables and blob files, which never change once
// written, go to shared/ under a name that is stable for the database's
// whole life and unique across databases; a file that an earlier checkpoint
// of the same database put there is referenced, not written again, and a
// new one is hard linked from the database where the file systems allow it
// and copied otherwise, then synced. The database's small files (MANIFEST,
// OPTIONS, markers) are copied into chk-<id>/op<op>-<subtask>/.
// _incremental.json lists, per subtask, its database's key groups and state
// ids (pebblebackend.Keyspace) and every file with its path, size and
// CRC-32C. Everything else is in the canonical _metadata and data files
// beside it. A checkpoint after a small change thus writes the new sstables
// and a few kilobytes, not the state (Result.CheckpointStats says how many
// bytes each wrote); compaction does rewrite files now and then, and the
// checkpoint after it writes what compaction wrote.
//
// Publication is atomic: a checkpoint is staged beside its target and
// renamed into place once every subtask has acknowledged, and a subtask
// acknowledges only after its shared files and the shared/ directory are
// synced. After each checkpoint, retention keeps the newest
// RetainCheckpoints checkpoint directories and deletes every shared file
// that none of them references. A run numbers its checkpoints after every
// complete one already under the root (an earlier run's too, when it is
// not restored from it), so that the newest are its own and no number is
// taken twice. For that, one run at a time writes a root: a run holds it
// from its start to its end, on disk by a lock on <root>/_lease, in a
// bucket by a lease object of that name that it renews (storage.Hold). A
// run started into a root that a live run holds fails with
// ErrCheckpointRootHeld; a root is one job's: the first run into it writes
// the job's name into <root>/_job, and a run of another job into it fails
// with ErrCheckpointRootOfAnotherJob rather than let its retention delete
// that job's checkpoints. In a bucket the lease of a run that died without
// releasing it is waited out (RunOptions.CheckpointLease after its last
// renewal, and a second more, since stores give times in whole seconds;
// the lease records its holder's term, and a run with a shorter one waits
// for that) and taken over. A run makes every delete and publication
// under the root within half a term of its last renewal. One whose
// renewals fail longer stops writing there, and its restart takes the
// lease back if no other run took it meanwhile; one whose lease another
// run took fails with ErrCheckpointRootHeld, without a restart, and
// leaves the objects of its checkpoint in flight to the retention of the
// root's new holder, but for its temporary uploads, whose random names are
// its own, which it removes. On systems without flock, two runs into one local
// root are not told apart.
//
// The checkpoint root and SavepointDir may also be bucket URLs (s3://,
// gs://, azblob://; file:// is a local path), with the same layout under
// the prefix. Nothing is renamed there: a checkpoint's objects are written
// in place under chk-<id>/ by the storage package's rules (data files
// named after their bytes, _incremental.json before _metadata, _metadata
// last and create-only), so a checkpoint exists exactly when its _metadata
// does, and LatestCheckpoint lists those. Shared files are uploaded from
// the native checkpoint under shared/ when first needed and referenced
// afterwards; an upload is durable when it returns, before the subtask
// acknowledges. Objects that a dead run left under the name of the
// checkpoint being begun, or of an unfinished one older than the newest,
// are removed, temporary uploads included; retention deletes a checkpoint _metadata first, then the
// shared objects no retained checkpoint references. A checkpoint whose
// publication failed may still be there (the answer to the PUT of its
// _metadata lost): the coordinator looks, and when the store cannot tell,
// the restart looks again and starts from it if it is there, since a
// restart from the one before would drop the sink transactions it holds
// pending; a store that still cannot tell ends the run, naming it. A restore from a
// bucket downloads each database's files into the attempt's work
// directory, checking sizes and checksums, and reads the canonical part
// with ranged reads.
//
// Restoring from an incremental checkpoint (RunOptions.RestoreFrom naming a
// chk-<id> directory, or the restart after a failure) checks each listed
// file's size and checksum, naming the file that is missing or damaged (a
// checkpoint that holds native databases' files without the
// _incremental.json that lists them is refused alike, rather than read as
// the canonical checkpoint it would look like, with no keyed state),
// links (or copies) each database's files into the attempt's work
// directory, opens them read-only, and reads them as savepoint entries: the
// checkpoint restores, as a savepoint does, at another parallelism and into
// either backend. Unlike a savepoint, it keeps the entries that
// full-snapshot TTL cleanup would have dropped, as the running database
// did, and TTL applies to them on read as it did there.
package engine
