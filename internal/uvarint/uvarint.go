// Package uvarint sizes unsigned varints as encoding/binary writes them,
// for the code that lays out length-prefixed frames before writing them:
// the serializers, the savepoint format, rescale's sort and the sizing
// model.
package uvarint

// Len is the number of bytes binary.PutUvarint writes for v.
func Len(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
