package flinkrewrite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/rewrite"
)

// ownLayouts counts the managed keyed parts of r in a backend's own layout:
// native RocksDB and heap.
func ownLayouts(t testing.TB, r *flinkfmt.Reader) (native, heap int) {
	t.Helper()
	for _, op := range r.Metadata().Operators {
		k, err := r.Keyed(context.Background(), op)
		if err != nil {
			continue
		}
		for _, p := range k.Parts() {
			switch p.Layout {
			case flinkfmt.LayoutRocksDBNative:
				native++
			case flinkfmt.LayoutHeap:
				heap++
			}
		}
	}
	return native, heap
}

// treeHash hashes every file name and content under dir.
func treeHash(t testing.TB, dir string) [sha256.Size]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		h.Write([]byte(p))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// convertFixture converts the fixture in dir into a new directory and
// returns it, checking that the input is untouched and that the output
// holds only canonical keyed state in the input's metadata version.
func convertFixture(t testing.TB, dir string, r *flinkfmt.Reader) (string, *ConvertReport) {
	t.Helper()
	before := treeHash(t, dir)
	st := stage(t)
	rep, err := Convert(context.Background(), r, st, Options{})
	if err != nil {
		t.Fatalf("%s: convert: %v", dir, err)
	}
	out := st.publish(t)
	if treeHash(t, dir) != before {
		t.Fatalf("%s: the input changed", dir)
	}
	got := open(t, out)
	if got.Metadata().Version != r.Metadata().Version {
		t.Fatalf("%s: metadata version %d, want %d", dir, got.Metadata().Version, r.Metadata().Version)
	}
	for _, op := range got.Metadata().Operators {
		for _, st := range op.Subtasks {
			if h := st.ManagedKeyed; h != nil && flinkfmt.HandleLayout(h) != flinkfmt.LayoutCanonical {
				t.Fatalf("%s: operator %s subtask %d: a %s handle in the output", dir, op.ID, st.Index, h.Kind)
			}
		}
	}
	if n, h := ownLayouts(t, got); n+h > 0 {
		t.Fatalf("%s: the output has %d native and %d heap parts", dir, n, h)
	}
	return out, rep
}

// Converting every reference savepoint and checkpoint whose keyed state is
// in a backend's own layout gives a savepoint of canonical key-group
// handles that holds the same entries, operator list elements and
// broadcast entries as the input, as sorted multisets, every key whose
// hashCode Flink defines by value in the key group of its hash.
func TestConvertEveryFixture(t *testing.T) {
	var mu sync.Mutex
	var nativeFixtures, heapFixtures, nativeParts, heapParts, entries, hashed, refused int
	var pairs uint64
	t.Run("fixtures", func(t *testing.T) {
		for _, dir := range fixtures(t) {
			name := strings.ReplaceAll(strings.TrimPrefix(dir, filepath.Dir(filepath.Dir(dir))+"/"), "/", "_")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r := open(t, dir)
				n, h := ownLayouts(t, r)
				if n+h == 0 {
					_, err := Convert(context.Background(), r, nil, Options{})
					if !errors.Is(err, rewrite.ErrRefused) {
						t.Fatalf("nothing to convert, and: %v", err)
					}
					mu.Lock()
					refused++
					mu.Unlock()
					return
				}
				out, rep := convertFixture(t, dir, r)
				in, got := readBack(t, dir), readBack(t, out)
				if d := in.diff(got); d != "" {
					t.Fatal(d)
				}
				var p uint64
				for _, o := range rep.Operators {
					p += o.Pairs
				}
				mu.Lock()
				defer mu.Unlock()
				if n > 0 {
					nativeFixtures++
				} else {
					heapFixtures++
				}
				nativeParts += n
				heapParts += h
				entries += got.entries
				hashed += got.hashed
				pairs += p
			})
		}
	})
	t.Logf("converted %d native RocksDB fixtures (%d subtasks) and %d heap fixtures (%d subtasks): %d pairs written, %d entries read back equal to the input's, %d keys in the key group of Flink's hash; %d canonical fixtures refused as having nothing to convert",
		nativeFixtures, nativeParts, heapFixtures, heapParts, pairs, entries, hashed, refused)
	if nativeFixtures < 40 || heapFixtures == 0 {
		t.Errorf("too few converted")
	}
}

// A RocksDB native savepoint or incremental checkpoint of a Flink
// migration test converts to the bytes of the canonical RocksDB savepoint
// the same test wrote with the same Flink version: header and every key
// group, except where the job is not deterministic (processing-time
// timers hold the wall clock), where the key group's entries are equal as
// multisets once those timers' timestamps are left out.
func TestConvertMatchesCanonicalFixture(t *testing.T) {
	ctx := context.Background()
	var pairsCompared, same, timerOnly, headers, flagOnly int
	for _, dir := range fixtures(t) {
		base := filepath.Base(dir)
		var canon string
		for _, suffix := range []string{"-rocksdb-savepoint-native", "-rocksdb-checkpoint"} {
			if strings.HasSuffix(base, suffix) {
				canon = filepath.Join(filepath.Dir(dir), strings.TrimSuffix(base, suffix)+"-rocksdb-savepoint")
			}
		}
		if canon == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(canon, flinkfmt.MetadataFile)); err != nil {
			continue
		}
		r := open(t, dir)
		if n, _ := ownLayouts(t, r); n == 0 {
			continue
		}
		out, _ := convertFixture(t, dir, r)
		want := open(t, canon)
		pairsCompared++
		for _, wop := range want.Metadata().Operators {
			var gop *flinkfmt.Operator
			for _, op := range open(t, out).Metadata().Operators {
				if op.ID == wop.ID {
					gop = op
				}
			}
			if gop == nil {
				t.Fatalf("%s: no operator %s", base, wop.ID)
			}
			for _, ws := range wop.Subtasks {
				if ws.ManagedKeyed == nil {
					continue
				}
				var gs flinkfmt.Subtask
				if i := slices.IndexFunc(gop.Subtasks, func(s flinkfmt.Subtask) bool { return s.Index == ws.Index }); i >= 0 {
					gs = gop.Subtasks[i]
				}
				if gs.ManagedKeyed == nil || gs.ManagedKeyed.KeyGroups != ws.ManagedKeyed.KeyGroups {
					t.Fatalf("%s: operator %s subtask %d: keyed state %v, want key groups %v", base, wop.ID, ws.Index, gs.ManagedKeyed, ws.ManagedKeyed.KeyGroups)
				}
				wantHead, wantKGs := keyGroupBytes(t, canon, ws.ManagedKeyed)
				gotHead, gotKGs := keyGroupBytes(t, out, gs.ManagedKeyed)
				// The header's fifth byte is its compression flag: a job that
				// compresses its snapshots records it in the canonical
				// savepoint, not in the native one (RocksDB compresses its
				// own blocks), and the conversion keeps the input's.
				if len(wantHead) > 4 && len(gotHead) > 4 && wantHead[4] != gotHead[4] {
					gotHead = append(append(bytes.Clone(gotHead[:4]), wantHead[4]), gotHead[5:]...)
					flagOnly++
				}
				if !bytes.Equal(wantHead, gotHead) {
					t.Fatalf("%s: operator %s subtask %d: the keyed-stream header differs from %s's", base, wop.ID, ws.Index, filepath.Base(canon))
				}
				headers++
				for kg, w := range wantKGs {
					g := gotKGs[kg]
					if bytes.Equal(g, w) {
						same++
						continue
					}
					// Not the same bytes: only processing-time timers may
					// differ, by their timestamps.
					wk, err := want.Keyed(ctx, wop)
					if err != nil {
						t.Fatal(err)
					}
					gk, err := open(t, out).Keyed(ctx, gop)
					if err != nil {
						t.Fatal(err)
					}
					if a, b := keyGroupWithoutWallClock(t, wk, kg), keyGroupWithoutWallClock(t, gk, kg); a != b {
						t.Fatalf("%s: operator %s key group %d: differs from %s's beyond processing-time timers:\n%s\n%s", base, wop.ID, kg, filepath.Base(canon), a, b)
					}
					timerOnly++
				}
				for kg := range gotKGs {
					if _, ok := wantKGs[kg]; !ok {
						t.Fatalf("%s: operator %s: key group %d has data that %s's has not", base, wop.ID, kg, filepath.Base(canon))
					}
				}
			}
		}
	}
	t.Logf("%d native fixtures converted and compared with the canonical RocksDB savepoint of their test and Flink version: %d headers (%d of them differing only in the compression flag) and %d key groups byte for byte (decompressed), %d key groups equal as multisets without the timestamps of processing-time timers",
		pairsCompared, headers, flagOnly, same, timerOnly)
	if pairsCompared < 10 || same == 0 {
		t.Errorf("too little compared")
	}
}

// keyGroupWithoutWallClock renders a key group's entries, sorted, with
// the timestamps of processing-time timers left out.
func keyGroupWithoutWallClock(t *testing.T, k *flinkfmt.Keyed, kg int) string {
	t.Helper()
	var lines []string
	for p, part := range k.Parts() {
		if part.Layout == flinkfmt.LayoutRawTimers || !part.Handle.KeyGroups.Contains(kg) {
			continue
		}
		entries, _, err := k.ReadKeyGroup(context.Background(), p, kg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			m := k.States[e.State]
			ts := e.Timestamp
			if strings.HasPrefix(m.Name, "_timer_state/processing_") {
				ts = 0
			}
			lines = append(lines, fmt.Sprintf("%s|%x|%x|%x|%x|%d|%v", m.Name, e.Key, e.Namespace, e.MapKey, e.Value, ts, e.Null))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// Converted savepoints pass the rescale proofs: a rescale to their own max
// parallelism gives every key group back byte for byte (the conversion
// writes RocksDB's order), one to another max parallelism and back gives
// the converted savepoint again, and every rewrite reads back with every
// key in the key group of Flink's hash.
func TestConvertedPassRescaleProofs(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var ops, identityKGs, backKGs, hashed, refusedOps int
	t.Run("fixtures", func(t *testing.T) {
		for _, dir := range fixtures(t) {
			name := strings.ReplaceAll(strings.TrimPrefix(dir, filepath.Dir(filepath.Dir(dir))+"/"), "/", "_")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r := open(t, dir)
				if n, _ := ownLayouts(t, r); n == 0 {
					return
				}
				conv, _ := convertFixture(t, dir, r)
				in := readBack(t, conv)
				cr := open(t, conv)
				for _, k := range rewritable(t, cr) {
					op := k.Operator
					st := stage(t)
					if _, err := Rescale(ctx, cr, st, RescaleOptions{MaxParallelism: op.MaxParallelism, Operator: op.ID.String()}); err != nil {
						t.Fatalf("operator %s: %v", op.ID, err)
					}
					same := st.publish(t)
					got := readBack(t, same)
					if d := in.diff(got); d != "" {
						t.Fatalf("operator %s: %s", op.ID, d)
					}
					nID := sameKeyGroups(t, conv, same, op.ID, func(int) bool { return true }, func(int) bool { return true })
					there := thereMaxParallelism(op.MaxParallelism)
					mid := stage(t)
					_, err := Rescale(ctx, cr, mid, RescaleOptions{MaxParallelism: there, Operator: op.ID.String(), Memory: 1 << 20})
					if errors.Is(err, rewrite.ErrRefused) {
						if k.Key != nil && keyhash.Hashable(k.Key) == nil && !hasRawKeyed(op) {
							t.Fatalf("operator %s: refused: %v", op.ID, err)
						}
						mu.Lock()
						refusedOps++
						ops++
						identityKGs += nID
						hashed += got.hashed
						mu.Unlock()
						continue
					} else if err != nil {
						t.Fatalf("operator %s: %v", op.ID, err)
					}
					midDir := mid.publish(t)
					gotMid := readBack(t, midDir)
					if d := in.diff(gotMid); d != "" {
						t.Fatalf("operator %s at %d: %s", op.ID, there, d)
					}
					back := stage(t)
					if _, err := Rescale(ctx, open(t, midDir), back, RescaleOptions{MaxParallelism: op.MaxParallelism, Operator: op.ID.String()}); err != nil {
						t.Fatalf("operator %s back: %v", op.ID, err)
					}
					backDir := back.publish(t)
					gotBack := readBack(t, backDir)
					if d := in.diff(gotBack); d != "" {
						t.Fatalf("operator %s back: %s", op.ID, d)
					}
					// Every subtask of a converted native savepoint has its own
					// header: the states another subtask registered are added
					// on the way back, so only key groups are compared.
					nBack := sameKeyGroups(t, conv, backDir, op.ID, func(int) bool { return true }, func(int) bool { return false })
					mu.Lock()
					ops++
					identityKGs += nID
					backKGs += nBack
					hashed += got.hashed + gotMid.hashed + gotBack.hashed
					mu.Unlock()
				}
			})
		}
	})
	t.Logf("%d operators of converted native fixtures: rescaled to their own max parallelism, header and %d key groups byte for byte; there and back, %d key groups byte for byte (%d refused by key class); %d keys checked against Flink's hash",
		ops, identityKGs, backKGs, refusedOps, hashed)
	if ops < 40 || identityKGs == 0 || backKGs == 0 {
		t.Errorf("too little compared")
	}
}
