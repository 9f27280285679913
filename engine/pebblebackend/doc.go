// Package pebblebackend is the Pebble (LSM) state backend of the engine: the
// keyed state and timers of one operator subtask live as serialized bytes in
// one Pebble database, so state can outgrow memory. It implements
// state.Backend and state.Sweeper and behaves exactly as the heap backend
// does, which the conformance suite in engine/state/statetest checks; the TTL
// rules run above it, in package state.
//
// # Key layout
//
// Every key starts with the key group, so a key group is one contiguous
// range of the database, then the id of a state or timer service (assigned
// in declaration order; the two share one id space):
//
//	value, reducing, aggregating  [u16 kg][u16 id][key][namespace]
//	list element                  [u16 kg][u16 id][key][namespace][u64 sequence]
//	map entry                     [u16 kg][u16 id][key][namespace][map key]
//	timer                         [u16 kg][u16 id][u64 time ^ 1<<63][key][namespace]
//
// Integers are big-endian. Key, namespace and map key are the serializers'
// bytes in an order-preserving escape: each 0x00 byte is written 0x00 0xFF
// and the component ends with 0x00 0x01. The terminator sorts below any
// escaped byte, so a component sorts before the components it is a prefix
// of, and consecutive components compare one by one. Pebble's byte order is
// therefore the savepoint format's order, (key, namespace, map key) compared
// component-wise, and timers sort by (time, key, namespace) because the time
// comes first with its sign bit flipped.
//
// The value of a state key is the stored value exactly as the savepoint
// format stores it: the serialized value, preceded for a TTL state by its
// 8-byte big-endian last-modified time. Timer keys have empty values. List
// sequences start at 0 and grow with each append; an append finds the last
// sequence with a reverse seek instead of reading the list, or without one
// when the list is one of the 16384 read or written last, whose ends are
// remembered; such a list of up to 8 elements is also read element by
// element from the write cache, and what the cache lacks by one point
// lookup or one iterator below it. Only the TTL sweep leaves gaps in a
// list, so a list of a state without TTL whose end is not remembered is
// read by point lookups too, up to its first missing sequence. A Bloom
// filter of the lists that may hold elements below the write cache, exact
// where it says no, lets a read of a new list skip the database.
//
// # Snapshots and restore
//
// A snapshot of one (key group, state) is one range scan from a Pebble
// snapshot, already in the format's order: keys are un-escaped and values
// copied as stored, so the bytes equal those the heap backend writes. A
// restore writes the entries back key group by key group, in ascending key
// order, into sstables of its own that the database ingests into its
// bottom level, copying values unless the state's serializer needs a
// migration; from the first key of a source that does not ascend, it
// writes through batches of bounded size instead.
//
// # TTL cleanup
//
// Pebble has no compaction filter, so expired entries that nothing reads are
// removed by Sweep: per TTL state with a sweep budget, a bounded number of
// entries per call, resuming from a cursor over the owned key groups. A
// call is skipped while the oldest time the state may hold has not expired:
// every write lowers that bound, a restore makes it unknown, and each pass
// of the sweeper over the whole state raises it to the oldest time left, so
// a state that churns (mostly deletion tombstones below the cache) is
// walked only when something in it may have expired. Full snapshots leave
// expired entries out for states that ask for it, reading only the
// timestamp.
//
// # Durability and native checkpoints
//
// The write-ahead log is off: as with Flink's RocksDB backend, state after a
// failure comes from the last snapshot, never from the local database, and
// New refuses a directory that already holds one. For the same reason the
// database's files are never synced.
//
// For the same reason state writes are not committed one by one. They
// first collect in a write-back cache of two generations of up to 1 MiB
// each, in Go maps, so that state that lives briefly (written, read and
// deleted within about a generation) never reaches Pebble, and a key a
// read found absent and that is deleted again is not even written as a
// deletion. The older generation spills into an indexed batch that every
// read sees through, committed when it reaches 64 KiB. Timer writes wait
// in a cache of their own per key group, where a timer registered and then
// deleted or fired never reaches Pebble when its key is known to be
// nowhere below: its time is after that of every timer its key group ever
// set below. Everything is spilled before an iterator over state is
// opened, except that the TTL sweep spills only the state it sweeps and the
// reverse seek for a list's end nothing (a list whose end is forgotten has
// its cached elements spilled then), and committed before every snapshot,
// checkpoint and restore, so a snapshot holds every write made before it. One iterator is kept between
// reads and dropped at each commit, and up to 16 first timers per key group
// are held in memory, with a note of whether they are all the key group
// has, since a seek costs more than most reads it serves.
//
// Checkpoint makes the native checkpoint that the runtime's incremental
// checkpoints are built from: it flushes the memtable (which no log holds),
// then Pebble's DB.Checkpoint hard-links the immutable sstables and copies
// the small files, so consecutive checkpoints share their unchanged
// sstables. Nothing is synced there; whoever keeps the files syncs them
// where they land. Because state ids follow declaration order, a checkpoint
// comes with its Keyspace (key groups and the id of every state and timer
// service), which CheckpointReader needs to turn the keys back into
// savepoint entries; a CheckpointSet reads the checkpoints of all of an
// operator's subtasks as one, so a checkpoint restores at any parallelism
// and into either backend.
package pebblebackend
