package heapbackend

import "encoding/binary"

// Records and timers are identified by strings built so that comparing two
// identifiers as strings compares the tuples the snapshot format sorts by:
// (key, namespace) for records and (time, key, namespace) for timers. Sorting
// identifiers is then all the ordering a snapshot or a timer queue needs.
//
// The key is escaped (0x00 becomes 0x00 0xFF) and terminated by 0x00 0x00.
// The terminator sorts below any escaped byte, so a key that is a prefix of
// another sorts first, exactly as with raw bytes; the namespace is last and
// needs no framing.

// appendKey appends the escaped, terminated key.
func appendKey(dst, key []byte) []byte {
	for _, c := range key {
		if c == 0 {
			dst = append(dst, 0, 0xFF)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 0)
}

// splitID appends the unescaped key of a record identifier to dst and
// returns it with the namespace.
func splitID(id string, dst []byte) (key []byte, ns string) {
	for i := 0; i < len(id); i++ {
		if id[i] != 0 {
			dst = append(dst, id[i])
			continue
		}
		if id[i+1] == 0 {
			return dst, id[i+2:]
		}
		dst = append(dst, 0)
		i++
	}
	return dst, ""
}

// appendTime appends a timer time so that the bytes sort as the numbers do:
// big-endian with the sign bit flipped, as the snapshot format stores it.
func appendTime(dst []byte, ts int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(ts)^1<<63)
}
