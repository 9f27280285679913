package savepoint

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

func TestDecoder(t *testing.T) {
	week := ttl.New(7 * 24 * time.Hour)
	op := &Operator{
		UID: "features", KeyHash: keygroup.Murmur3, Key: serializers.Snapshot{Kind: serializers.KindString},
		States: []KeyedState{{
			Name: "counts", Kind: Map, Namespace: serializers.Snapshot{Kind: serializers.KindWindow},
			MapKey: serializers.Snapshot{Kind: serializers.KindString}, Value: serializers.Snapshot{Kind: serializers.KindInt64}, TTL: &week,
		}},
		Timers: []TimerService{{Name: "t", Namespace: serializers.Snapshot{Kind: serializers.KindVoid}}},
	}
	d, err := NewDecoder(op, &op.States[0])
	if err != nil {
		t.Fatal(err)
	}
	be := binary.BigEndian
	ns := be.AppendUint64(be.AppendUint64(nil, 0), 60_000)
	value := be.AppendUint64(be.AppendUint64(nil, 1_700_000_000_000), 7)
	got, err := d.Decode(&Entry{Key: []byte("alice"), Namespace: ns, MapKey: []byte("books"), Value: value})
	if err != nil {
		t.Fatal(err)
	}
	want := Decoded{Key: "alice", Namespace: serializers.TimeWindow{Start: 0, End: 60_000}, MapKey: "books", Value: int64(7),
		LastModified: 1_700_000_000_000, HasTTL: true}
	if got != want {
		t.Errorf("Decode = %+v, want %+v", got, want)
	}

	// A TTL value shorter than its timestamp, and a value of the wrong
	// length, are decode errors that name the part.
	for _, v := range [][]byte{{1, 2, 3}, be.AppendUint64(be.AppendUint64(nil, 1), 7)[:12]} {
		if _, err := d.Decode(&Entry{Key: []byte("a"), Namespace: ns, MapKey: []byte("b"), Value: v}); !errors.Is(err, serializers.ErrDecode) {
			t.Errorf("Decode(value %x) = %v, want ErrDecode", v, err)
		}
	}
	if _, err := d.Decode(&Entry{Key: []byte{0xff}, Namespace: ns, Value: value}); !errors.Is(err, serializers.ErrDecode) {
		t.Errorf("Decode(key ff) = %v, want ErrDecode", err)
	}

	td, err := NewTimerDecoder(op, &op.Timers[0])
	if err != nil {
		t.Fatal(err)
	}
	got, err = td.Decode(&Entry{Key: []byte("bob"), Timestamp: 42})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Decoded{Key: "bob", Namespace: serializers.VoidNamespace{}, Timestamp: 42}); got != want {
		t.Errorf("timer Decode = %+v, want %+v", got, want)
	}
	if b, err := td.Key().AppendAny(nil, "bob"); err != nil || string(b) != "bob" {
		t.Errorf("Key().AppendAny(bob) = %q, %v", b, err)
	}

	bad := *op
	bad.Key = serializers.Snapshot{Kind: "nope"}
	if _, err := NewDecoder(&bad, &bad.States[0]); !errors.Is(err, serializers.ErrSnapshot) {
		t.Errorf("NewDecoder with an unknown key kind = %v, want ErrSnapshot", err)
	}
}
