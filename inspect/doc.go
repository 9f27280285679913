// Package inspect tells what a savepoint holds and whether it is whole, as
// plain result structs: the library behind stateproc inspect and stateproc
// verify, which only parse flags and render.
//
// Inspect answers from the metadata and the figures of the segments (keys,
// entries, bytes, key-group skew, TTL and timer time ranges) without
// reading data; with a scan it reads every entry's framing on every core,
// which checks the figures against the data, and adds value-size
// percentiles, the ages of TTL entries at a given time by the TTL rule
// (package ttl), the most timers a key has, and the heaviest keys. Verify
// reads every segment, and with Deep decodes every value with the
// serializers the savepoint carries.
//
// It reads only through the read seam (savepoint.Source), so it serves
// every layout package layouts opens, and imports nothing of any layout.
package inspect
