package diff

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Entry is one entry of an example, decoded, with the fields stateproc
// dump prints after the key, in its order: namespace (unless void),
// map_key or index, value, ttl_last_modified, or a timer's timestamp.
type Entry []Field

// Field is one named part of an Entry.
type Field struct {
	Name  string
	Value any
}

// Get returns the field called name.
func (e Entry) Get(name string) (any, bool) {
	for _, f := range e {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// MarshalJSON writes the fields as one object, in order.
func (e Entry) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range e {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(f.Name)
		b.Write(name)
		b.WriteByte(':')
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, fmt.Errorf("diff: field %s: %w", f.Name, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// rawEntry is an entry kept, as bytes of its own, until its key's fate is
// known and it is decoded for an example or dropped.
type rawEntry struct {
	key, namespace, mapKey, value []byte
	timestamp                     int64
	index                         int
	// n is the entry's number in its segment, to locate a decode failure.
	n uint64
}

func keep(into []rawEntry, e *savepoint.Entry, index int, n uint64) []rawEntry {
	// Slots are reused from key to key, so that keeping allocates only
	// while the buffers grow.
	if len(into) < cap(into) {
		into = into[:len(into)+1]
	} else {
		into = append(into, rawEntry{})
	}
	r := &into[len(into)-1]
	r.key = append(r.key[:0], e.Key...)
	r.namespace = append(r.namespace[:0], e.Namespace...)
	r.mapKey = append(r.mapKey[:0], e.MapKey...)
	r.value = append(r.value[:0], e.Value...)
	r.timestamp, r.index, r.n = e.Timestamp, index, n
	return into
}

// decoder renders the entries of one side of a keyed state or timer
// service for examples, with the serializers of its snapshots.
type decoder struct {
	meta *savepoint.Metadata
	dec  *savepoint.Decoder
	// state is nil for a timer service.
	state                         *savepoint.KeyedState
	voidNS                        bool
	key, namespace, mapKey, value func(any) any
}

func newDecoder(meta *savepoint.Metadata, ref savepoint.StateRef) (*decoder, error) {
	op := &meta.Operators[ref.Operator]
	d := &decoder{meta: meta, key: jsonvalue.For(op.Key)}
	var err error
	if ks := meta.KeyedState(ref); ks != nil {
		d.state = ks
		d.dec, err = savepoint.NewDecoder(op, ks)
		d.voidNS = ks.Namespace.Kind == serializers.KindVoid
		d.namespace, d.mapKey, d.value = jsonvalue.For(ks.Namespace), jsonvalue.For(ks.MapKey), jsonvalue.For(ks.Value)
	} else {
		ts := meta.TimerService(ref)
		d.dec, err = savepoint.NewTimerDecoder(op, ts)
		d.voidNS = ts.Namespace.Kind == serializers.KindVoid
		d.namespace = jsonvalue.For(ts.Namespace)
	}
	if err != nil {
		// The snapshots were checked when the metadata was read; one that
		// still cannot be restored makes the savepoint unreadable here.
		return nil, inspect.MetadataCorrupt(fmt.Sprintf("%s: a serializer snapshot cannot be restored", meta.Describe(ref)), err)
	}
	return d, nil
}

// decodeKey renders key bytes, or their hex when they do not decode: the
// entries beside it say what is wrong.
func (d *decoder) decodeKey(key []byte) any {
	v, err := d.dec.Key().DecodeAny(key)
	if err != nil {
		return jsonvalue.Value(key)
	}
	return d.key(v)
}

// entry decodes r; a failure is corruption located in seg.
func (d *decoder) entry(r *rawEntry, seg savepoint.Segment) (Entry, error) {
	e := savepoint.Entry{KeyGroup: seg.KeyGroup, Key: r.key, Namespace: r.namespace, MapKey: r.mapKey, Value: r.value, Timestamp: r.timestamp}
	if d.state == nil {
		e.MapKey, e.Value = nil, nil
	}
	dec, err := d.dec.Decode(&e)
	if err != nil {
		return nil, inspect.Undecodable(d.meta, seg, r.n, err)
	}
	var out Entry
	if !d.voidNS {
		out = append(out, Field{"namespace", d.namespace(dec.Namespace)})
	}
	if d.state == nil {
		return append(out, Field{"timestamp", jsonvalue.Time(dec.Timestamp)}), nil
	}
	switch d.state.Kind {
	case savepoint.Map:
		out = append(out, Field{"map_key", d.mapKey(dec.MapKey)})
	case savepoint.List:
		out = append(out, Field{"index", r.index})
	}
	out = append(out, Field{"value", d.value(dec.Value)})
	if dec.HasTTL {
		out = append(out, Field{"ttl_last_modified", jsonvalue.Time(dec.LastModified)})
	}
	return out, nil
}
