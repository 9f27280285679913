package flinkrewrite

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/rewrite"
)

// rewritable lists the operators of a fixture whose keyed state this
// package rewrites: managed keyed state in the canonical or heap layout.
func rewritable(t *testing.T, r *flinkfmt.Reader) []*flinkfmt.Keyed {
	var out []*flinkfmt.Keyed
	for _, op := range r.Metadata().Operators {
		k, err := r.Keyed(context.Background(), op)
		if errors.Is(err, flinkfmt.ErrNotKeyed) || errors.Is(err, flinkfmt.ErrUnsupported) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		ok := len(managedParts(k)) > 0
		for _, p := range k.Parts() {
			ok = ok && (p.Layout == flinkfmt.LayoutCanonical || p.Layout == flinkfmt.LayoutHeap || p.Layout == flinkfmt.LayoutRawTimers)
		}
		if ok {
			out = append(out, k)
		}
	}
	return out
}

// rocksDBOrder reports whether every key group of part is in RocksDB's
// order: by state id, then composite key.
func rocksDBOrder(t *testing.T, k *flinkfmt.Keyed, p int) bool {
	h, err := k.CanonicalHeader([]int{p})
	if err != nil {
		t.Fatal(err)
	}
	part := k.Parts()[p]
	var entries []flinkfmt.Entry
	enc := k.PairEncoder()
	for kg := part.Handle.KeyGroups.Start; kg <= part.Handle.KeyGroups.End; kg++ {
		if entries, _, err = k.ReadKeyGroup(context.Background(), p, kg, entries[:0]); err != nil {
			t.Fatal(err)
		}
		pairs := enc.Encode(entries)
		if !slices.IsSortedFunc(pairs, func(a, b flinkfmt.Pair) int {
			return cmp.Or(cmp.Compare(h.IDs[a.State], h.IDs[b.State]), bytes.Compare(a.Key, b.Key))
		}) {
			return false
		}
	}
	return true
}

// sameKeyGroups compares the keyed state of operator id in two savepoints
// subtask by subtask: byte for byte (the header and every key group,
// decompressed) where bytesFor and headerFor are true for the subtask, its
// key groups only where bytesFor alone is, and else only that both cover
// the same key groups. It returns the key groups compared.
func sameKeyGroups(t *testing.T, dirA, dirB string, id flinkfmt.OperatorID, bytesFor, headerFor func(subtask int) bool) int {
	t.Helper()
	find := func(dir string) *flinkfmt.Operator {
		for _, op := range open(t, dir).Metadata().Operators {
			if op.ID == id {
				return op
			}
		}
		t.Fatalf("%s: no operator %s", dir, id)
		return nil
	}
	a, b := find(dirA), find(dirB)
	n := 0
	for _, sa := range a.Subtasks {
		if sa.ManagedKeyed == nil {
			continue
		}
		i := slices.IndexFunc(b.Subtasks, func(s flinkfmt.Subtask) bool { return s.Index == sa.Index })
		if i < 0 || b.Subtasks[i].ManagedKeyed == nil {
			t.Fatalf("operator %s: subtask %d has no keyed state in %s", id, sa.Index, dirB)
		}
		hb := b.Subtasks[i].ManagedKeyed
		if hb.KeyGroups != sa.ManagedKeyed.KeyGroups {
			t.Fatalf("operator %s subtask %d: key groups %v, want %v", id, sa.Index, hb.KeyGroups, sa.ManagedKeyed.KeyGroups)
		}
		if !bytesFor(sa.Index) {
			continue
		}
		headA, kgsA := keyGroupBytes(t, dirA, sa.ManagedKeyed)
		headB, kgsB := keyGroupBytes(t, dirB, hb)
		if len(kgsA) != len(kgsB) {
			t.Fatalf("operator %s subtask %d: %d key groups with data, want %d", id, sa.Index, len(kgsB), len(kgsA))
		}
		if headerFor(sa.Index) && !bytes.Equal(headA, headB) {
			t.Fatalf("operator %s subtask %d: the keyed-stream header differs", id, sa.Index)
		}
		for kg, want := range kgsA {
			if !bytes.Equal(kgsB[kg], want) {
				t.Fatalf("operator %s subtask %d: key group %d differs", id, sa.Index, kg)
			}
			n++
		}
	}
	return n
}

// Rescaling every canonical and heap operator of every reference savepoint
// to its own max parallelism is the identity: the key-group streams of
// RocksDB's canonical savepoints come back byte for byte (RocksDB writes
// entries in key order within each state), those written in the heap's
// order come back with the same entries (in RocksDB's order); the
// rewritten savepoint reads back, every key in the key group Flink's hash
// gives it.
func TestRescaleToOwnMaxParallelismIsIdentity(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var fixturesDone, ops, bytesKG, bytesParts, heapOrder, heapLayout, entries, hashed int
	eachFixture(t, func(t *testing.T, dir string, r *flinkfmt.Reader, keyed []*flinkfmt.Keyed) {
		in := readBack(t, dir)
		for _, k := range keyed {
			op := k.Operator
			st := stage(t)
			rep, err := Rescale(ctx, r, st, RescaleOptions{MaxParallelism: op.MaxParallelism, Operator: op.ID.String()})
			if err != nil {
				t.Fatalf("operator %s: %v", op.ID, err)
			}
			out := st.publish(t)
			got := readBack(t, out)
			if d := in.diff(got); d != "" {
				t.Fatalf("operator %s: %s", op.ID, d)
			}
			sorted := map[int]bool{}
			var nBytes, nOrder, nHeap int
			for p, part := range k.Parts() {
				switch {
				case part.Layout == flinkfmt.LayoutHeap:
					nHeap++
				case part.Layout != flinkfmt.LayoutCanonical:
				case rocksDBOrder(t, k, p):
					sorted[part.Subtask] = true
					nBytes++
				default:
					nOrder++
					if strings.Contains(filepath.Base(dir), "rocksdb") {
						t.Errorf("operator %s subtask %d: a RocksDB savepoint not in key order", op.ID, part.Subtask)
					}
				}
			}
			n := sameKeyGroups(t, dir, out, op.ID, func(s int) bool { return sorted[s] }, func(int) bool { return true })
			for _, o := range rep.Operators {
				if o.ID == op.ID.String() && o.Action != Rewritten {
					t.Errorf("operator %s: %s", op.ID, o.Action)
				}
			}
			mu.Lock()
			ops++
			bytesKG += n
			bytesParts += nBytes
			heapOrder += nOrder
			heapLayout += nHeap
			entries += got.entries
			hashed += got.hashed
			mu.Unlock()
		}
		mu.Lock()
		fixturesDone++
		mu.Unlock()
	})
	t.Logf("%d fixtures, %d operators rescaled to their own max parallelism: %d canonical subtasks in RocksDB's order, header and %d key groups byte for byte; "+
		"%d canonical subtasks in the heap's order and %d in the heap layout equal as multisets; %d entries read back, %d keys in the key group of Flink's hash",
		fixturesDone, ops, bytesParts, bytesKG, heapOrder, heapLayout, entries, hashed)
	if bytesKG == 0 || heapOrder == 0 || heapLayout == 0 || ops < 100 {
		t.Errorf("too little compared")
	}
}

// eachFixture runs f, in parallel subtests, for every reference savepoint
// that has an operator whose keyed state this package rewrites.
func eachFixture(t *testing.T, f func(t *testing.T, dir string, r *flinkfmt.Reader, keyed []*flinkfmt.Keyed)) {
	t.Run("fixtures", func(t *testing.T) {
		for _, dir := range fixtures(t) {
			name := strings.ReplaceAll(strings.TrimPrefix(dir, filepath.Dir(filepath.Dir(dir))+"/"), "/", "_")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r := open(t, dir)
				if keyed := rewritable(t, r); len(keyed) > 0 {
					f(t, dir, r, keyed)
				}
			})
		}
	})
}

// thereMaxParallelism is the max parallelism a fixture is rescaled to and
// back from: across the 128 at which the key-group prefix grows a byte.
func thereMaxParallelism(maxP int) int {
	if maxP == 300 {
		return 97
	}
	return 300
}

// Rescaling every operator whose keys Flink hashes by value from its max
// parallelism M to another and back to M gives the input again (byte for
// byte for RocksDB's canonical savepoints, as multisets for the heap's);
// both rewrites read back with every key in the key group of Flink's hash.
func TestRescaleThereAndBack(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var ops, bytesKG, entries, hashed, refusedOps, grown int
	refusals := map[string]int{}
	eachFixture(t, func(t *testing.T, dir string, r *flinkfmt.Reader, keyed []*flinkfmt.Keyed) {
		in := readBack(t, dir)
		for _, k := range keyed {
			op := k.Operator
			there := thereMaxParallelism(op.MaxParallelism)
			st := stage(t)
			_, err := Rescale(ctx, r, st, RescaleOptions{MaxParallelism: there, Operator: op.ID.String(), Memory: 1 << 20})
			if errors.Is(err, rewrite.ErrRefused) {
				// Kryo keys, and the raw keyed timers of Flink before 1.10.
				reason := ""
				switch {
				case errors.Is(err, keyhash.ErrNotValueHashed):
					reason = "key class " + k.Key.Type.Class
				case strings.Contains(err.Error(), "raw keyed state"):
					reason = "raw keyed state"
				default:
					t.Fatalf("operator %s: %v", op.ID, err)
				}
				if k.Key != nil && keyhash.Hashable(k.Key) == nil && !hasRawKeyed(op) {
					t.Fatalf("operator %s: refused: %v", op.ID, err)
				}
				mu.Lock()
				refusedOps++
				refusals[reason]++
				mu.Unlock()
				continue
			}
			if err != nil {
				t.Fatalf("operator %s: %v", op.ID, err)
			}
			mid := st.publish(t)
			gotMid := readBack(t, mid)
			if d := in.diff(gotMid); d != "" {
				t.Fatalf("operator %s at %d: %s", op.ID, there, d)
			}
			back := stage(t)
			if _, err := Rescale(ctx, open(t, mid), back, RescaleOptions{MaxParallelism: op.MaxParallelism, Operator: op.ID.String()}); err != nil {
				t.Fatalf("operator %s back: %v", op.ID, err)
			}
			out := back.publish(t)
			got := readBack(t, out)
			if d := in.diff(got); d != "" {
				t.Fatalf("operator %s back: %s", op.ID, d)
			}
			// A subtask whose header lacks a state the operator's others
			// registered (Flink registers a state when the job first uses
			// it) comes back with the merged header, which has it: its key
			// groups are the same bytes where the states keep their ids.
			merged, err := k.CanonicalHeader(managedParts(k))
			if err != nil {
				t.Fatal(err)
			}
			sorted, fullHeader := map[int]bool{}, map[int]bool{}
			g := 0
			for p, part := range k.Parts() {
				if part.Layout != flinkfmt.LayoutCanonical || !rocksDBOrder(t, k, p) {
					continue
				}
				own, err := k.CanonicalHeader([]int{p})
				if err != nil {
					t.Fatal(err)
				}
				sameIDs := true
				for i, id := range own.IDs {
					sameIDs = sameIDs && (id < 0 || id == merged.IDs[i])
				}
				sorted[part.Subtask] = sameIDs
				fullHeader[part.Subtask] = bytes.Equal(own.Bytes, merged.Bytes)
				if !fullHeader[part.Subtask] {
					g++
				}
			}
			n := sameKeyGroups(t, dir, out, op.ID, func(s int) bool { return sorted[s] }, func(s int) bool { return fullHeader[s] })
			mu.Lock()
			ops++
			bytesKG += n
			grown += g
			entries += got.entries
			hashed += gotMid.hashed + got.hashed
			mu.Unlock()
		}
	})
	t.Logf("%d operators rescaled there and back: %d key groups byte for byte (%d subtasks whose header gained states other subtasks had registered), %d entries, %d keys checked against Flink's hash; %d refused: %v",
		ops, bytesKG, grown, entries, hashed, refusedOps, refusals)
	if ops < 50 || bytesKG == 0 {
		t.Errorf("too little compared")
	}
}

func hasRawKeyed(op *flinkfmt.Operator) bool {
	for _, st := range op.Subtasks {
		if st.RawKeyed != nil {
			return true
		}
	}
	return false
}
