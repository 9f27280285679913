package flinkfmt

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// figuresSavepoint writes a canonical savepoint into dir whose entries take
// every way of NextFigures: max parallelism 256 (two-byte key-group
// prefixes), String keys; a map state in a String namespace (so composite
// keys carry the lengths of key and namespace), with null values and keys
// out of order; a value state in a Long namespace; a list state, which is
// Next's alone. It returns the stream and where its first key group
// starts.
func figuresSavepoint(t *testing.T, dir string) ([]byte, int64) {
	t.Helper()
	str, long := SimpleSnapshot(StringSnapshotClass), SimpleSnapshot(LongSnapshotClass)
	mapSnap, err := MapSnapshot(str, long)
	if err != nil {
		t.Fatal(err)
	}
	listSnap, err := ListSnapshot(long)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewCanonicalHeader(str, false, []StateSpec{
		{Name: "m", Kind: Map, Namespace: str, Value: mapSnap},
		{Name: "v", Kind: Value, Namespace: long, Value: long},
		{Name: "l", Kind: List, Namespace: SimpleSnapshot(VoidNamespaceClass), Value: listSnap},
	})
	if err != nil {
		t.Fatal(err)
	}
	const maxP = 256
	var stream bytes.Buffer
	w, err := NewCanonicalWriter(&stream, h, maxP, keygroup.All(maxP))
	if err != nil {
		t.Fatal(err)
	}
	add := func(kg, state int, key, value []byte) {
		if err := w.Add(kg, state, key, value); err != nil {
			t.Fatal(err)
		}
	}
	long8 := func(v int64) bld { return bld(nil).i64(v) }
	for _, kg := range []int{3, 200} {
		for i, key := range []string{"b", "ab", "abc", "a", "b"} {
			k := bld(nil).str(key)
			for j, ns := range []string{"window-1", ""} {
				n := bld(nil).str(ns)
				for _, uk := range []string{"x", "yy"} {
					composite := appendVariableInt(append(appendVariableInt(append(bld(nil), k...), len(k)), n...), len(n))
					composite = bld(composite).str(uk)
					value := append(bld{0}, long8(int64(kg+i+j))...)
					if uk == "yy" && j == 1 {
						value = bld{1} // null
					}
					add(kg, 0, composite, value)
				}
			}
		}
		for _, key := range []string{"k2", "k1"} {
			add(kg, 1, bld(nil).str(key).i64(int64(kg)), long8(7))
		}
		add(kg, 2, bld(nil).str("k").u8(0), append(append(long8(1), ','), long8(2)...))
	}
	offsets, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	m := &Metadata{Version: 3, Operators: []*Operator{{Parallelism: 1, MaxParallelism: maxP, Subtasks: []Subtask{{ManagedKeyed: &KeyedHandle{
		Kind: KeyedSavepointKeyGroups, KeyGroups: keygroup.All(maxP), Offsets: offsets,
		Stream: &StreamHandle{Kind: StreamRelativeFile, Name: "keyed", Size: int64(stream.Len())}}}}}}}
	b, err := EncodeMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, MetadataFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keyed"), stream.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return stream.Bytes(), offsets[3]
}

type figure struct {
	state, kg    int
	key          string
	bytes, value int
}

func openFigures(t *testing.T, dir string) *Keyed {
	ctx := context.Background()
	r, err := Open(ctx, storage.LocalDir(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := r.Keyed(ctx, r.Metadata().Operators[0])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// readFigures reads every entry of k: with quick, through
// NextFigures wherever it takes them (batches of three) and Next where it
// does not; otherwise through Next alone. It returns the figures, how
// many came from NextFigures, and the iterator's error.
func readFigures(t *testing.T, k *Keyed, quick bool) ([]figure, int, error) {
	ctx := context.Background()
	it := k.Entries(ctx, -1, keygroup.All(k.Operator.MaxParallelism))
	defer it.Close()
	var out []figure
	quicks := 0
	batch := make([]Figures, 3)
	for {
		n := 0
		if quick {
			n = it.NextFigures(batch)
		}
		if n > 0 {
			for _, f := range batch[:n] {
				prev := out[len(out)-1]
				if f.SameKey && string(f.Key) != prev.key {
					t.Fatalf("%q is not the key before, %q", f.Key, prev.key)
				}
				out = append(out, figure{prev.state, prev.kg, string(f.Key), f.Bytes, f.Value})
			}
			quicks += n
			continue
		}
		if !it.Next() {
			break
		}
		e := it.Entry()
		f := figure{e.State, e.KeyGroup, string(e.Key), len(e.Key) + len(e.Namespace) + len(e.MapKey) + len(e.Value), len(e.Value)}
		if k.States[e.State].Kind == Map {
			f.bytes++
			f.value++
		}
		out = append(out, f)
	}
	return out, quicks, it.Err()
}

// NextFigures gives the figures of the entries Next gives, and fails where
// Next fails, with the same error: on a savepoint that takes every way of
// it, and on that savepoint with each byte of its key groups damaged in
// three ways.
func TestNextFiguresIsNext(t *testing.T) {
	dir := t.TempDir()
	good, start := figuresSavepoint(t, dir)
	k := openFigures(t, dir)
	want, _, err := readFigures(t, k, false)
	if err != nil {
		t.Fatal(err)
	}
	got, quicks, err := readFigures(t, k, true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("NextFigures gives\n%v\nNext\n%v", got, want)
	}
	// All but the first entry of each run and the list's.
	if quicks < len(want)/2 {
		t.Errorf("NextFigures took %d of %d entries", quicks, len(want))
	}
	var damaged, failed int
	for off := int(start); off < len(good); off++ {
		for _, damage := range []func(byte) byte{func(c byte) byte { return c ^ 0x80 }, func(byte) byte { return 0xFF }, func(byte) byte { return 0 }} {
			b := bytes.Clone(good)
			if b[off] = damage(b[off]); b[off] == good[off] {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, "keyed"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			k := openFigures(t, dir)
			want, _, wantErr := readFigures(t, k, false)
			got, _, err := readFigures(t, k, true)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("byte %d damaged: NextFigures gives %d figures and %v, Next %d and %v", off, len(got), err, len(want), wantErr)
			}
			damaged++
			if err != nil {
				failed++
			}
		}
	}
	t.Logf("%d entries, %d through NextFigures; %d damaged savepoints, %d of them failing", len(want), quicks, damaged, failed)
}
