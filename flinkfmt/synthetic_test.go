package flinkfmt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

const (
	longSnapshotClass   = "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot"
	stringSnapshotClass = "org.apache.flink.api.common.typeutils.base.StringSerializer$StringSerializerSnapshot"
	voidSnapshotClass   = "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"
)

func (b bld) versioned(class string) bld { return b.utf(class).i32(3) }

// ttlLongSnapshot is TtlSerializerSnapshot over [Long, Long].
func (b bld) ttlLongSnapshot() bld {
	return b.utf("org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot").i32(3).
		i32(911108).i32(1).i32(1333245).i32(1).i32(2).versioned(longSnapshotClass).versioned(longSnapshotClass)
}

// keyedHeader writes a version 6 header: String keys, one VALUE state
// "visits" of TTL-wrapped longs in the void namespace.
func keyedHeader() bld {
	return bld(nil).i32(6).u8(0).i32(2).versioned(stringSnapshotClass).u16(1).
		utf("visits").i32(int(KeyValue)).
		i32(1).utf("KEYED_STATE_TYPE").utf("VALUE").
		i32(2).
		utf(namespaceSerializerKey).i32(2).versioned(voidSnapshotClass).
		utf(valueSerializerKey).i32(2).ttlLongSnapshot()
}

// A canonical savepoint built from the layout, with a TTL state: each
// entry's value is the 8-byte last-access time and the value, as both
// Flink's TtlValue and stateproc's TTL wrapper store it.
func TestCanonicalTTLState(t *testing.T) {
	const maxP = 128
	kgOf := func(key string) int {
		k := &Keyed{Operator: &Operator{MaxParallelism: maxP}}
		kg, _ := k.KeyGroupOf(key)
		return kg
	}
	stream := keyedHeader()
	offsets := make([]int64, maxP)
	// Two keys, each in its own key group, in key-group order.
	keys := []string{"alice", "bob"}
	if kgOf(keys[0]) > kgOf(keys[1]) {
		keys[0], keys[1] = keys[1], keys[0]
	}
	for i, key := range keys {
		kg := kgOf(key)
		offsets[kg] = int64(len(stream))
		composite := bld(nil).u8(byte(kg) | 0x80).str(key).u8(0) // last entry of the state
		value := bld(nil).i64(1_700_000_000_000).i64(int64(i + 1))
		stream = stream.u16(0).i32(len(composite)).raw(composite...).i32(len(value)).raw(value...).u16(0xFFFF)
	}
	handle := bld(nil).u8(byte(KeyedSavepointKeyGroups)).i32(0).i32(maxP)
	for _, o := range offsets {
		handle = handle.i64(o)
	}
	handle = handle.u8(byte(StreamRelativeFile)).utf("keyed").i64(int64(len(stream)))
	meta := bld(nil).i32(Magic).i32(3).i64(1).i32(0).i32(1).raw(make([]byte, 16)...).i32(1).i32(maxP).u8(0).i32(1).
		i32(0).i32(0).i32(0).raw(handle...).u8(0).i32(0).i32(0)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, MetadataFile), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keyed"), stream, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := Open(ctx, storage.LocalDir(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := r.Keyed(ctx, r.Metadata().Operators[0])
	if err != nil {
		t.Fatal(err)
	}
	m := k.States[0]
	if m.Kind != Value || !m.TTL || m.UserValue().Type.Kind != typeser.KindInt64 {
		t.Fatalf("state %+v", m)
	}
	it := k.Entries(ctx, 0, keygroup.All(maxP))
	var got []string
	for it.Next() {
		e := it.Entry()
		key, _ := k.Key.Decode(e.Key)
		v, err := m.Stored.Decode(e.Value)
		if err != nil {
			t.Fatal(err)
		}
		ttl := v.(typeser.TTLValue)
		if len(e.Value) != 16 || ttl.LastAccess != 1_700_000_000_000 || e.KeyGroup != kgOf(key.(string)) {
			t.Errorf("entry %+v: %v", e, v)
		}
		got = append(got, key.(string))
	}
	if it.Err() != nil || len(got) != 2 || got[0] != keys[0] {
		t.Fatalf("%v, %v", got, it.Err())
	}
	// A key group larger than the reader's bound is refused by name.
	r.opts.MaxKeyGroupBytes = 8
	it = k.Entries(ctx, 0, keygroup.All(maxP))
	for it.Next() {
	}
	if !errors.Is(it.Err(), ErrUnsupported) {
		t.Errorf("a key group over the bound: %v", it.Err())
	}
}

// When both the key and the namespace have variable lengths, each is
// followed by its length in variable-int bytes (SerializedCompositeKeyBuilder).
func TestAmbiguousCompositeKey(t *testing.T) {
	str := func() *typeser.Serializer {
		t.Helper()
		s, err := typeser.ReadProxied(wireBuf(bld(nil).i32(2).versioned(stringSnapshotClass)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	k := &Keyed{Operator: &Operator{MaxParallelism: 128}, Key: str()}
	m := &StateMeta{Name: "m", Kind: Map, Namespace: str(), MapKey: str()}
	b := bld(nil).str("key").u8(4).str("namespace").u8(10).str("mk")
	p := &kgParser{k: k}
	key, ns, user, err := p.splitKey(m, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    []byte
		want string
	}{{key, "key"}, {ns, "namespace"}, {user, "mk"}} {
		v, err := k.Key.Decode(c.b)
		if err != nil || v != c.want {
			t.Errorf("%q: %v, %v", c.b, v, err)
		}
	}
}

// Raw keyed state without the timer services' marker that does not parse
// as Flink 1.3's timers is an operator's own: it is noted, not an error.
func TestRawKeyedStateOfAnOperator(t *testing.T) {
	const maxP = 128
	raw := bld(nil).i32(3).raw([]byte("user bytes")...)
	handle := bld(nil).u8(byte(KeyedKeyGroups)).i32(0).i32(1).i64(0).u8(byte(StreamInline)).utf("raw").i32(len(raw)).raw(raw...)
	meta := bld(nil).i32(Magic).i32(3).i64(1).i32(0).i32(1).raw(make([]byte, 16)...).i32(1).i32(maxP).u8(0).i32(1).
		i32(0).i32(0).i32(0).u8(0).raw(handle...).i32(0).i32(0)
	m, err := ParseMetadata(meta)
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{meta: m, opts: Options{MaxKeyGroupBytes: 1 << 20}}
	k, err := r.Keyed(context.Background(), m.Operators[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Notes) != 1 || len(k.States) != 0 {
		t.Errorf("notes %q, %d states", k.Notes, len(k.States))
	}
}
