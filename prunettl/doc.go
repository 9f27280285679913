// Package prunettl implements `stateproc prune-ttl`: a rewrite of a savepoint
// without the values, list elements and map entries that are expired at a
// given time under the TTL rule of package ttl, which the engine, inspect
// and export apply too.
//
// It reads only framing and the 8-byte last-modified time in front of each
// stored value; no value is decoded, so no serializer is needed. The index's
// minimum and maximum times settle most segments without reading them: a
// segment none of whose entries is expired is copied as opaque bytes, one
// all of whose entries are expired is dropped, and only the rest are
// filtered: item by item, copying the runs of items kept as they are
// framed, from a stateproc savepoint, and entry by entry from other
// layouts. The output keeps the input's layout (file names,
// segment order, block size and compression), so its data files and index
// are byte for byte those the engine writes with full-snapshot cleanup at
// the same time from the same state.
package prunettl
