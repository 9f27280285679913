package savepoint

import (
	"encoding/binary"
	"fmt"

	"github.com/stateproc/stateproc/serializers"
)

// Decoder turns the entries of one keyed state or timer service into Go
// values with serializers restored from the savepoint's snapshots, so that
// tools read state without the job's code. The values are the untyped forms
// of package serializers.
type Decoder struct {
	key, namespace, mapKey, value serializers.Serializer
	ttl                           bool
	// checks validate key, namespace, map key and value.
	checks [4]func([]byte) error
}

// Decoded is an entry as Go values.
type Decoded struct {
	Key, Namespace any
	// MapKey is set for map states only.
	MapKey any
	// Value is nil for timers.
	Value any
	// LastModified is the TTL timestamp; HasTTL says whether there is one.
	LastModified int64
	HasTTL       bool
	// Timestamp is the timer's time; timers only.
	Timestamp int64
}

// NewDecoder restores the serializers of keyed state s of operator op.
func NewDecoder(op *Operator, s *KeyedState) (*Decoder, error) {
	d := &Decoder{ttl: s.TTL != nil}
	var err error
	if d.key, err = restoreFor(op, s.Name, "key", op.Key); err != nil {
		return nil, err
	}
	if d.namespace, err = restoreFor(op, s.Name, "namespace", s.Namespace); err != nil {
		return nil, err
	}
	if s.Kind == Map {
		if d.mapKey, err = restoreFor(op, s.Name, "map key", s.MapKey); err != nil {
			return nil, err
		}
	}
	if d.value, err = restoreFor(op, s.Name, "value", s.Value); err != nil {
		return nil, err
	}
	d.makeChecks()
	return d, nil
}

// NewTimerDecoder restores the serializers of timer service t of operator
// op. Timers have a key and a namespace, no value.
func NewTimerDecoder(op *Operator, t *TimerService) (*Decoder, error) {
	d := &Decoder{}
	var err error
	if d.key, err = restoreFor(op, t.Name, "key", op.Key); err != nil {
		return nil, err
	}
	if d.namespace, err = restoreFor(op, t.Name, "namespace", t.Namespace); err != nil {
		return nil, err
	}
	d.makeChecks()
	return d, nil
}

func (d *Decoder) makeChecks() {
	for i, s := range []serializers.Serializer{d.key, d.namespace, d.mapKey, d.value} {
		if s != nil {
			d.checks[i] = serializers.Validator(s)
		}
	}
}

func restoreFor(op *Operator, state, what string, s serializers.Snapshot) (serializers.Serializer, error) {
	ser, err := serializers.Restore(s)
	if err != nil {
		return nil, fmt.Errorf("savepoint: operator %q state %q: %s serializer: %w", op.UID, state, what, err)
	}
	return ser, nil
}

// Key returns the restored key serializer: tools use it to encode a key
// given on a command line, and so find its key group.
func (d *Decoder) Key() serializers.Serializer { return d.key }

// Decode decodes every part of e. The error wraps serializers.ErrDecode and
// names the part that failed.
func (d *Decoder) Decode(e *Entry) (Decoded, error) {
	var out Decoded
	var err error
	if out.Key, err = d.key.DecodeAny(e.Key); err != nil {
		return out, fmt.Errorf("key: %w", err)
	}
	if out.Namespace, err = d.namespace.DecodeAny(e.Namespace); err != nil {
		return out, fmt.Errorf("namespace: %w", err)
	}
	if d.value == nil {
		out.Timestamp = e.Timestamp
		return out, nil
	}
	if d.mapKey != nil {
		if out.MapKey, err = d.mapKey.DecodeAny(e.MapKey); err != nil {
			return out, fmt.Errorf("map key: %w", err)
		}
	}
	v := e.Value
	if d.ttl {
		if v, err = splitTTL(v); err != nil {
			return out, err
		}
		out.LastModified, out.HasTTL = int64(binary.BigEndian.Uint64(e.Value)), true
	}
	if out.Value, err = d.value.DecodeAny(v); err != nil {
		return out, fmt.Errorf("value: %w", err)
	}
	return out, nil
}

// splitTTL returns what follows the TTL timestamp of a stored value.
func splitTTL(v []byte) ([]byte, error) {
	if len(v) < 8 {
		return nil, fmt.Errorf("value: %w: %d bytes, shorter than the 8-byte TTL timestamp", serializers.ErrDecode, len(v))
	}
	return v[8:], nil
}

// Validate returns the error Decode returns for e, or nil, without
// building the values (see serializers.Validate): it is how a reader checks
// every entry without paying for values it does not look at.
func (d *Decoder) Validate(e *Entry) error {
	if err := d.checks[0](e.Key); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if err := d.checks[1](e.Namespace); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	if d.value == nil {
		return nil
	}
	if d.mapKey != nil {
		if err := d.checks[2](e.MapKey); err != nil {
			return fmt.Errorf("map key: %w", err)
		}
	}
	v := e.Value
	if d.ttl {
		var err error
		if v, err = splitTTL(v); err != nil {
			return err
		}
	}
	if err := d.checks[3](v); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	return nil
}
