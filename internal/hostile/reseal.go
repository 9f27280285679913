package hostile

import (
	"encoding/binary"

	"github.com/stateproc/stateproc/internal/crc"
)

// Reseal recomputes the checksums of a savepoint after its bytes changed:
// the metadata's CRC, over its body length field as it stands and what
// follows, and the CRC of every block of every data file that a walk from
// the preamble frames, so that a reader gets past its checksums to what
// they cover.
func Reseal(files map[string][]byte) {
	if m := files[MetadataName]; len(m) >= preambleLen+8+4 {
		binary.BigEndian.PutUint32(m[len(m)-4:], crc.Checksum(m[preambleLen:len(m)-4]))
	}
	for name, f := range files {
		if name == MetadataName {
			continue
		}
		for _, at := range Blocks(f) {
			end := at + blockHeader + int(binary.BigEndian.Uint32(f[at+1:]))
			binary.BigEndian.PutUint32(f[end:], crc.Checksum(f[at:end]))
		}
	}
}

// Blocks returns the offsets of the blocks of a data file, walking from
// its preamble by their stored lengths for as long as a whole block fits.
func Blocks(f []byte) []int {
	var out []int
	for at := preambleLen; at+blockHeader+4 <= len(f); {
		end := at + blockHeader + int(binary.BigEndian.Uint32(f[at+1:]))
		if end < at || end+4 > len(f) {
			break
		}
		out = append(out, at)
		at = end + 4
	}
	return out
}
