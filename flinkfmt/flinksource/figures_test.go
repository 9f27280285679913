package flinksource_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

type segKey struct {
	ref savepoint.StateRef
	kg  int
}

// countByNext counts the keyed entries of src from its flinkfmt entries,
// read with Next alone, as the counting did before NextFigures: distinct
// keys in a map, bytes summed entry by entry. An error is the first an
// iterator gave.
func countByNext(ctx context.Context, src *flinksource.Source) (map[segKey]savepoint.Stats, error) {
	r := src.Reader()
	out := map[segKey]savepoint.Stats{}
	for opIdx, fop := range r.Metadata().Operators {
		k, err := r.Keyed(ctx, fop)
		if errors.Is(err, flinkfmt.ErrNotKeyed) || errors.Is(err, flinkfmt.ErrUnsupported) || err == nil && k.Key == nil {
			continue
		}
		if err != nil {
			return nil, err
		}
		// The refs, as the source numbers them: timers and states apart.
		refs := make([]savepoint.StateRef, len(k.States))
		var timers, states int
		for i, m := range k.States {
			if m.Kind == flinkfmt.Timers {
				refs[i] = savepoint.StateRef{Operator: opIdx, State: timers, Timer: true}
				timers++
			} else {
				refs[i] = savepoint.StateRef{Operator: opIdx, State: states}
				states++
			}
		}
		keys := map[segKey]map[string]bool{}
		it := k.Entries(ctx, -1, keygroup.All(fop.MaxParallelism))
		for it.Next() {
			e := it.Entry()
			sk := segKey{refs[e.State], e.KeyGroup}
			st := out[sk]
			st.KeyGroup = e.KeyGroup
			if keys[sk] == nil {
				keys[sk] = map[string]bool{}
			}
			if !keys[sk][string(e.Key)] {
				keys[sk][string(e.Key)] = true
				st.Keys++
			}
			st.Entries++
			st.Bytes += uint64(len(e.Key) + len(e.Namespace) + len(e.MapKey) + len(e.Value))
			switch {
			case k.States[e.State].Kind == flinkfmt.Map:
				st.Bytes++
			case refs[e.State].Timer:
				st.Bytes += 8
				if st.Entries == 1 || e.Timestamp < st.MinTimestamp {
					st.MinTimestamp = e.Timestamp
				}
				if st.Entries == 1 || e.Timestamp > st.MaxTimestamp {
					st.MaxTimestamp = e.Timestamp
				}
			}
			out[sk] = st
		}
		err = it.Err()
		it.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sameCounts says how the segments differ from the counts of countByNext.
func sameCounts(segs []savepoint.Segment, want map[segKey]savepoint.Stats) error {
	got := map[segKey]savepoint.Stats{}
	for _, s := range segs {
		got[segKey{s.Ref, s.KeyGroup}] = s.Stats
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d segments, counting entry by entry finds %d", len(got), len(want))
	}
	for k, w := range want {
		if g := got[k]; !reflect.DeepEqual(g, w) {
			return fmt.Errorf("%v key group %d: %+v, counting entry by entry gives %+v", k.ref, k.kg, g, w)
		}
	}
	return nil
}

// The segments, counted from NextFigures where it can, hold the keys,
// entries, bytes and timer times that counting the entries one by one
// with Next gives: every fixture, and the benchmark's shape written by the
// generator, plain and Snappy-compressed.
func TestSegmentsAreCountedAsEntryByEntry(t *testing.T) {
	ctx := context.Background()
	dirs := fixtures(t)
	for _, compressed := range []bool{false, true} {
		c := flinkgen.SessionsLarge()
		c.Users, c.Compressed = 3000, compressed
		target := filepath.Join(t.TempDir(), "sp")
		if _, err := flinkgen.WriteDir(ctx, target, false, c); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, target)
	}
	var checked, segments int
	for _, dir := range dirs {
		open := func() *flinksource.Source {
			src, err := flinksource.Open(ctx, storage.LocalDir(dir), flinkfmt.Options{})
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			return src
		}
		src := open()
		if src.Metadata().CheckRead(-1) != nil {
			continue
		}
		want, wantErr := countByNext(ctx, open())
		segs, err := savepoint.AllSegments(ctx, src)
		walked, _, walkErr := walk(ctx, open(), 2, true)
		switch {
		case (err != nil) != (wantErr != nil) || (walkErr != nil) != (wantErr != nil):
			t.Errorf("%s: AllSegments: %v; CountSegments: %v; entry by entry: %v", dir, err, walkErr, wantErr)
		case err != nil:
			if err.Error() != wantErr.Error() || walkErr.Error() != wantErr.Error() {
				t.Errorf("%s: AllSegments: %v; CountSegments: %v; entry by entry: %v", dir, err, walkErr, wantErr)
			}
		default:
			if err := sameCounts(segs, want); err != nil {
				t.Errorf("%s: AllSegments: %v", dir, err)
			}
			if err := sameCounts(walked, want); err != nil {
				t.Errorf("%s: CountSegments: %v", dir, err)
			}
			checked++
			segments += len(segs)
		}
	}
	t.Logf("%d savepoints, %d segments", checked, segments)
	if checked < 3 {
		t.Errorf("only %d savepoints counted", checked)
	}
}
