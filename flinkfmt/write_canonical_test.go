package flinkfmt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/storage"
)

// Every key group of every canonical handle of the reference savepoints,
// read into entries, turned into pairs and written again under the
// handle's own header, gives the header and the key group's bytes back
// (decompressed, since Go's Snappy encoder is not xerial's).
func TestCanonicalWriterReproducesFixtures(t *testing.T) {
	root, rows := inventory(t)
	ctx := context.Background()
	var handles, keyGroups, compressed int
	for _, row := range rows {
		dir := filepath.Join(root, row.dir)
		r, err := Open(ctx, storage.LocalDir(dir), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range r.Metadata().Operators {
			k, err := r.Keyed(ctx, op)
			if errors.Is(err, ErrNotKeyed) || errors.Is(err, ErrUnsupported) {
				continue
			} else if err != nil {
				t.Fatalf("%s: %v", row.dir, err)
			}
			for p, part := range k.Parts() {
				if part.Layout != LayoutCanonical {
					continue
				}
				n, err := reproduceCanonical(ctx, k, p)
				if err != nil {
					t.Errorf("%s: operator %s subtask %d: %v", row.dir, op.ID, part.Subtask, err)
				}
				handles++
				keyGroups += n
				if k.subtasks[p].header.Compressed {
					compressed++
				}
			}
		}
	}
	t.Logf("%d canonical handles (%d compressed), %d key groups with data, reproduced", handles, compressed, keyGroups)
	if handles < 400 || compressed == 0 {
		t.Errorf("only %d canonical handles, %d compressed", handles, compressed)
	}
}

func reproduceCanonical(ctx context.Context, k *Keyed, p int) (int, error) {
	sk := k.subtasks[p]
	h, err := k.CanonicalHeader([]int{p})
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(h.Bytes, sk.header.raw) {
		return 0, errors.New("the header differs")
	}
	var out bytes.Buffer
	w, err := NewCanonicalWriter(&out, h, k.Operator.MaxParallelism, sk.handle.KeyGroups)
	if err != nil {
		return 0, err
	}
	var entries []Entry
	enc := k.PairEncoder()
	for kg := sk.handle.KeyGroups.Start; kg <= sk.handle.KeyGroups.End; kg++ {
		entries, _, err = k.ReadKeyGroup(ctx, p, kg, entries[:0])
		if err != nil {
			return 0, err
		}
		pairs := enc.Encode(entries)
		keys := map[string]bool{}
		for _, e := range entries {
			keys[string(e.Key)] = true
		}
		for _, pr := range pairs {
			if !keys[string(pr.UserKey)] {
				return 0, fmt.Errorf("key group %d: a pair's user key % x is no entry's key", kg, pr.UserKey)
			}
			if err := w.Add(kg, h.IDs[pr.State], pr.Key, pr.Value); err != nil {
				return 0, err
			}
		}
	}
	offsets, err := w.Finish()
	if err != nil {
		return 0, err
	}
	n := 0
	ends := slices.Clone(offsets)
	slices.Sort(ends)
	for i, off := range offsets {
		kg := sk.handle.KeyGroups.Start + i
		if (off == 0) != (sk.handle.Offsets[i] == 0) {
			return n, errors.New("a key group is empty in one stream only")
		}
		if off == 0 {
			continue
		}
		end := int64(out.Len())
		if j, ok := slices.BinarySearch(ends, off); ok && j+1 < len(ends) {
			end = ends[j+1]
		}
		got := out.Bytes()[off:end]
		if sk.header.Compressed {
			if got, err = unsnappy(got, 1<<30); err != nil {
				return n, err
			}
		}
		want, err := k.r.readKeyGroup(ctx, sk, i, kg, LayoutCanonical)
		if err != nil {
			return n, err
		}
		if !bytes.Equal(got, want.b) {
			return n, fmt.Errorf("key group %d differs", kg)
		}
		n++
	}
	return n, nil
}
