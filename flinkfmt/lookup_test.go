package flinkfmt

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/storage"
)

// A lookup by key reads the key group Flink's hash names: in the migration
// test's 1.20 savepoint, key Tuple1(2) is in key group 3 of 4, with
// state-name 2.
func TestLookupByKey(t *testing.T) {
	root := fixtureRoot(t)
	ctx := context.Background()
	r, err := Open(ctx, storage.LocalDir(filepath.Join(root, "flink-tests/src/test/resources/new-stateful-udf-migration-itcase-flink1.20-hashmap-savepoint")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	op, err := r.Operator("d5c8b168c6cbfe8c507a10f88b325243")
	if err != nil {
		t.Fatal(err)
	}
	k, err := r.Keyed(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	key := typeser.RecordValue{Class: "org.apache.flink.api.java.tuple.Tuple1", Fields: []typeser.FieldValue{{Name: "f0", Value: int64(2)}}}
	if kg, ok := k.KeyGroupOf(key); !ok || kg != 3 {
		t.Errorf("KeyGroupOf = %d, %v", kg, ok)
	}
	state := k.State("state-name")
	it := k.Lookup(ctx, state, key)
	n := 0
	for it.Next() {
		n++
		e := it.Entry()
		if v, err := k.States[state].Stored.Decode(e.Value); err != nil || v != int64(2) || e.KeyGroup != 3 {
			t.Errorf("entry %+v: %v, %v", e, v, err)
		}
	}
	if it.Err() != nil || n != 1 {
		t.Errorf("%d entries, %v", n, it.Err())
	}
	key.Fields[0].Value = int64(99)
	it = k.Lookup(ctx, state, key)
	if it.Next() || it.Err() != nil {
		t.Errorf("a missing key was found: %v", it.Err())
	}
}
