// Package export writes the state of a savepoint as datasets of Parquet (or
// Arrow IPC, or JSON lines) files, typed from the serializer snapshots the
// savepoint carries, so that DuckDB, Spark or pyarrow read state without the
// job's code. It reads through the read seam, savepoint.Source, so that it
// exports a savepoint of any layout package layouts opens, and writes into
// a storage.Staging that its caller publishes when Run succeeds.
//
// # Layout
//
// One directory per keyed state, timer service, operator state and
// broadcast state, named by the operator's uid and the state's name:
//
//	DIR/<operator uid>/<state name>/part-00000.parquet
//	DIR/<operator uid>/<state name>/part-00001.parquet
//	...
//
// A state is cut into files of at most Options.MaxRowsPerFile rows, which
// several cores write at once; in name order the files hold the rows in the
// savepoint's order (key group, then key, namespace and map key, list
// elements in list order; timers by time within a key group). A state
// without entries still has one file, with its columns and no rows. Names
// are escaped to one safe path element each: bytes other than letters,
// digits, '-', '_', '.' and '~' become %XX, as do a leading '.' or '_'
// (hidden files to most readers).
//
// # Columns
//
//	keyed state      key_group int32, key, namespace, map_key (map states),
//	                 index int32 (list states: the element's position), value,
//	                 ttl_last_modified (TTL states), expired (TTL states,
//	                 with Options.Now)
//	timer service    key_group int32, key, namespace, timestamp
//	operator state   subtask int32, index int32, value
//	broadcast state  key, value
//
// A void namespace has no column; a window namespace is two columns,
// window_start and window_end. expired is ttl.Expired of the entry's
// last-modified time at Options.Now. Timestamps that the savepoint stores
// (TTL, timers, windows, the timestamp serializer) are instants in
// milliseconds: timestamp[ms, UTC].
//
// Serializer kinds map to Arrow types as follows (non-null unless said):
//
//	bool, int32, int64      bool, int32, int64
//	float32, float64        float32, float64
//	string, bytes           utf8, binary
//	timestamp               timestamp[ms, UTC]
//	void                    null
//	window                  struct<start, end timestamp[ms, UTC]>
//	nullable<T>             T, nullable
//	list<T>                 list<T>
//	map<K, V>               map<K, V> (K must not be nullable)
//	ttl<T> (nested)         struct<last_modified timestamp[ms, UTC], value T>
//	timer (nested)          no mapping
//	avro                    by the writer schema, below
//
// Avro types map as follows:
//
//	null                          null
//	boolean, int, long            bool, int32, int64
//	float, double                 float32, float64
//	string (uuid too)             utf8 (checked to be UTF-8)
//	bytes                         binary
//	fixed(n)                      fixed_size_binary(n)
//	enum                          dictionary<int32, utf8>, the symbols in order
//	record                        struct, one field per field
//	array<T>                      list<T>
//	map<T>                        map<utf8, T>
//	union [null, T], [T]          T, nullable with null
//	union of nulls only           null
//	any other union               struct with one nullable field per non-null
//	                              branch, named by the branch's type name (or
//	                              full name if two share a name); the null
//	                              branch makes the struct null
//	date                          date32
//	time-millis, time-micros      time32[ms], time64[us]
//	timestamp-millis, -micros     timestamp[ms, UTC], timestamp[us, UTC]
//	local-timestamp-millis, -micros timestamp[ms], timestamp[us]
//	decimal(p, s), p <= 38        decimal128(p, s)
//	decimal(p, s), p <= 76        decimal256(p, s)
//	duration (fixed 12)           struct<months, days, milliseconds uint32>
//
// A record that contains itself, a record with no fields, a fixed of size
// 0 and a decimal of more than 76 digits have no mapping: Run refuses the
// export before writing anything, with an error wrapping ErrUnmappable that
// names the state and the place in its type.
//
// Avro values are decoded from their binary encoding straight into Arrow
// builders by a plan compiled once per schema, never through generic Go
// values; every length and count is checked against the bytes that remain,
// by the same cursor as the serializers' (internal/avrobin): export
// accepts exactly the values that dump and verify --deep read, and refuses,
// as they do, strings and map keys that are not UTF-8 and repeated map
// keys. A schema is parsed with the cursor's bounds (at most 1000 levels of
// nesting, fixed types of at most 1 MiB), so a column never holds more
// levels of builders than that.
// A value that does not decode fails the export with an error wrapping
// serializers.ErrDecode that names the state, key group and entry.
//
// # Files
//
// Parquet files are zstd-compressed with row groups of
// Options.RowGroupRows rows (fewer when the input bytes of a row group
// reach 64 MiB). Each column's encoding suits state data (see encodings in
// parquet.go): key and map_key, sorted, are stored as prefix deltas, other
// strings with a dictionary, integers and timestamps as bit-packed deltas,
// those of timestamps uncompressed, since zstd does not shrink them.
// Columns carry minimum and maximum statistics, except map_key, whose
// values in a row group span about every map key. A keyed state or timer
// service whose columns are all primitive (serializers of bool, numbers,
// strings, bytes and timestamps, void or window namespaces; Flink's
// booleans, ints, longs, floats, doubles and Strings, and TTL values of
// them) is flat: its values are decoded into plain slices, with
// definition levels where they may be null, that Parquet's column writers
// take as they are, without Arrow arrays in between (flat.go), into the bytes
// that writing them through Arrow gives, except for two columns: where a
// flat state's string or bytes keys repeat in runs (list and map states,
// windows), its key column is dictionary-encoded, the dictionary being
// the row group's runs in order, each stored once; and a flat map state's
// string or bytes map_key has a dictionary of its distinct values when
// the file's first row group holds few of them (up to 1,024, more while
// they are at most a quarter of the rows, in at most 1 MiB), with plain
// values in a later row group that holds more.
// Every file records as key-value metadata stateproc.savepoint_id,
// stateproc.operator, stateproc.state, stateproc.kind, and
// stateproc.serializers (the serializer snapshots as JSON), plus
// stateproc.now for the expired column; the same goes into the schema
// metadata of Arrow files. Memory is bounded by a row group per worker
// (RowGroupRows rows, or 64 MiB of input) and the block being read,
// whatever the size of the state or of one key's list or map. A file that
// starts inside a key group is written by a worker of its own, which reads
// that key group from its start and skips what the file before holds; the
// later files that start in the same key group follow it on the same
// worker, which reads the key group once, so that a key group of many
// files costs no more than one of few. Which worker writes a file does not
// change its bytes.
//
// Stage checks the directory an export goes to and stages it beside it,
// under the rules of a rewrite's output: a target spelled through links is
// compared with its links resolved, so it never lies inside the input; the
// export holds the target's lock; and the staging directories that killed
// exports into the same target left are removed.
package export
