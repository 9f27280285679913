package pebblebackend

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stateproc/stateproc/savepoint"
)

// entryDecoder turns stored keys and values back into savepoint entries, for
// snapshots and for readers of native checkpoints. It reuses one entry and
// its buffers.
type entryDecoder struct {
	e               savepoint.Entry
	key, ns, mapKey []byte
}

// decode parses the key and value the iterator stands on, of a state of the
// given kind, or of a timer service when kind is zero. The entry is valid
// until the next decode or the iterator's next move.
func (d *entryDecoder) decode(kind savepoint.Kind, it *pebble.Iterator) (*savepoint.Entry, error) {
	k := it.Key()
	if len(k) < prefixLen {
		return nil, fmt.Errorf("%w: key of %d bytes", errKey, len(k))
	}
	e := &d.e
	*e = savepoint.Entry{KeyGroup: int(binary.BigEndian.Uint16(k))}
	suffix := k[prefixLen:]
	if kind == 0 {
		if len(suffix) < 8 {
			return nil, fmt.Errorf("%w: timer key of %d bytes", errKey, len(suffix))
		}
		e.Timestamp = readTime(suffix)
		suffix = suffix[8:]
	}
	var err error
	if d.key, suffix, err = readEscaped(d.key[:0], suffix); err != nil {
		return nil, err
	}
	if d.ns, suffix, err = readEscaped(d.ns[:0], suffix); err != nil {
		return nil, err
	}
	e.Key, e.Namespace = d.key, d.ns
	switch kind {
	case 0:
		return e, trailing(suffix, 0)
	case savepoint.List:
		err = trailing(suffix, seqLen)
	case savepoint.Map:
		if d.mapKey, suffix, err = readEscaped(d.mapKey[:0], suffix); err == nil {
			e.MapKey = d.mapKey
			err = trailing(suffix, 0)
		}
	default:
		err = trailing(suffix, 0)
	}
	if err != nil {
		return nil, err
	}
	if e.Value, err = it.ValueAndErr(); err != nil {
		return nil, err
	}
	return e, nil
}

// trailing checks that exactly n bytes follow the parsed components.
func trailing(rest []byte, n int) error {
	if len(rest) != n {
		return fmt.Errorf("%w: %d trailing bytes, want %d", errKey, len(rest), n)
	}
	return nil
}
