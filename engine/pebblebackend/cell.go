package pebblebackend

import (
	"encoding/binary"
	"fmt"

	"github.com/stateproc/stateproc/engine/state"
)

// ttlHeader is the size of the last-modified time that starts every stored
// value of a TTL state, as in the savepoint format.
const ttlHeader = 8

// appendCell appends the stored bytes of c: for a TTL state the 8-byte
// big-endian last-modified time, then the value's serialized bytes.
func (s *stateInfo) appendCell(dst []byte, c state.Cell) ([]byte, error) {
	if s.spec.TTL != nil {
		dst = binary.BigEndian.AppendUint64(dst, uint64(c.Timestamp))
		s.wrote(c.Timestamp)
	}
	dst, err := s.spec.Value.AppendAny(dst, c.Value)
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: state %q: value: %w", s.spec.Name, err)
	}
	return dst, nil
}

// wrote notes a write with last-modified time t for the sweeper. Every
// write of a TTL state's cell comes through appendCell, so the notes see
// them all (a write that then fails only lowers the bound further).
func (s *stateInfo) wrote(t int64) {
	s.lowTime = min(s.lowTime, t)
	s.sinceSpill = min(s.sinceSpill, t)
	s.passLow = min(s.passLow, t)
}

// decodeCell is the inverse of appendCell. b may be Pebble's memory, valid
// only until the next read: decoding straight from it is safe because no
// serializer's decoded value aliases its input (bytes decode to a fresh
// slice, hamba/avro copies too).
func (s *stateInfo) decodeCell(b []byte) (state.Cell, error) {
	var c state.Cell
	if s.spec.TTL != nil {
		if len(b) < ttlHeader {
			return c, fmt.Errorf("pebblebackend: state %q: stored value of %d bytes lacks its timestamp", s.spec.Name, len(b))
		}
		c.Timestamp = int64(binary.BigEndian.Uint64(b))
		b = b[ttlHeader:]
	}
	v, err := s.spec.Value.DecodeAny(b)
	if err != nil {
		return c, fmt.Errorf("pebblebackend: state %q: value: %w", s.spec.Name, err)
	}
	c.Value = v
	return c, nil
}

// expiredAt applies the TTL rule to stored bytes, reading only their
// timestamp. A state without TTL never expires; a value too short to hold a
// timestamp is left alone for a read to report.
func (s *stateInfo) expiredAt(stored []byte, now int64) bool {
	if s.spec.TTL == nil || len(stored) < ttlHeader {
		return false
	}
	return s.spec.TTL.Expired(int64(binary.BigEndian.Uint64(stored)), now)
}
