package savepoint

// Stats summarizes the data of one state (or timer service) in one key group.
type Stats struct {
	KeyGroup int
	// Keys counts distinct keys.
	Keys uint64
	// Entries counts values, list elements, map entries or timers.
	Entries uint64
	// Bytes is the size of the serialized keys, namespaces, map keys and
	// values with their framing, before block compression.
	Bytes uint64
	// MinTimestamp and MaxTimestamp bound the TTL last-modified timestamps of
	// a TTL state, or the timestamps of a timer service. They are meaningful
	// only when Entries > 0 and the state has TTL or is a timer service.
	MinTimestamp, MaxTimestamp int64
	// Sizes is the histogram of a keyed state's value sizes (the value's
	// own bytes, without a TTL timestamp). Modified, for a TTL state, is
	// the histogram of the entries' ExpiryOffset from Anchor, a time in
	// epoch milliseconds (normally the savepoint's creation time), from
	// which their ages and expiry at any time derive. They are nil where
	// the layout does not record them: timer services, stateproc's format
	// version 1, other layouts.
	Sizes, Modified Histogram
	Anchor          int64
}

// Entry is one stored entry of a keyed state or timer service, as bytes.
//
// For value, reducing and aggregating states there is one entry per (key,
// namespace); for list states one per element, in list order; for map states
// one per map entry, in map-key byte order; for timer services one per timer.
// A segment gives its entries by (key, namespace, map key) bytes, timers by
// (time, key, namespace), unless its layout says otherwise (Layout.Unsorted).
type Entry struct {
	// KeyGroup is the key group of Key, which the entry is stored under.
	KeyGroup  int
	Key       []byte
	Namespace []byte
	// MapKey is set for map states only.
	MapKey []byte
	// Value is the stored value: for a TTL state the 8-byte big-endian
	// last-modified timestamp followed by the value bytes. Empty for timers.
	Value []byte
	// Timestamp is the timer's time; timers only.
	Timestamp int64
}
