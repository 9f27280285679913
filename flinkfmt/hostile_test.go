package flinkfmt

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/storage"
)

// Damaged key groups of real fixtures, cut at every length and with every
// byte flipped in turn, fail with a structural error or decode to other
// entries; they never panic.
func TestDamagedKeyGroups(t *testing.T) {
	root, rows := inventory(t)
	ctx := context.Background()
	groups := 0
	for _, row := range rows {
		if groups >= 40 {
			break
		}
		r, err := Open(ctx, storage.LocalDir(filepath.Join(root, row.dir)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(ctx, op)
			if err != nil {
				continue
			}
			for _, sk := range k.subtasks {
				if sk.layout != LayoutCanonical && sk.layout != LayoutHeap && sk.layout != LayoutRawTimers {
					continue
				}
				for i := range sk.handle.Offsets {
					d, err := r.readKeyGroup(ctx, sk, i, sk.handle.KeyGroups.Start+i, sk.layout, nil, nil)
					if err != nil || d == nil || len(d.b) > 2048 {
						continue
					}
					groups++
					damage(t, k, sk, sk.handle.KeyGroups.Start+i, d.b)
				}
			}
		}
	}
	if groups == 0 {
		t.Fatal("no key group was damaged")
	}
	t.Logf("%d key groups damaged at every byte", groups)
}

func damage(t *testing.T, k *Keyed, sk *subtaskKeyed, kg int, b []byte) {
	parse := func(b []byte) error {
		var out []Entry
		p := &kgParser{k: k, sk: sk, kg: kg, state: -1, out: &out, prefix: prefixLen(k.Operator.MaxParallelism)}
		err := p.parse(wire.New(b, 0))
		for _, e := range out {
			if m := k.States[e.State]; m.Kind != Timers && !e.Null {
				_, _ = m.Stored.Decode(e.Value)
			}
		}
		return err
	}
	if err := parse(b); err != nil {
		t.Fatalf("the undamaged key group %d: %v", kg, err)
	}
	c := make([]byte, len(b))
	for i := 0; i < len(b); i++ {
		if err := parse(b[:i]); err == nil {
			t.Fatalf("key group %d cut to %d of %d bytes parsed", kg, i, len(b))
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("key group %d cut to %d bytes: %v", kg, i, err)
		}
		copy(c, b)
		c[i] ^= 0xFF
		if err := parse(c); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("key group %d with byte %d flipped: %v", kg, i, err)
		}
	}
}

// Reading a savepoint leaves every file of it as it was.
func TestInputUnchanged(t *testing.T) {
	root := fixtureRoot(t)
	dir := filepath.Join(root, "flink-tests/src/test/resources/new-stateful-udf-migration-itcase-flink1.19-hashmap-checkpoint")
	sums := func() map[string][32]byte {
		out := map[string][32]byte{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = sha256.Sum256(b)
		}
		return out
	}
	before := sums()
	if res := readFixture(t, dir); res.entries == 0 {
		t.Fatal("nothing read")
	}
	after := sums()
	for name, s := range before {
		if after[name] != s {
			t.Errorf("%s changed", name)
		}
	}
}
