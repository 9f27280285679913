package flinksource_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/storage"
)

func fixtures(t testing.TB) []string {
	t.Helper()
	root := filepath.Join("..", "..", "..", "shared", "flink-savepoints")
	b, err := os.ReadFile(filepath.Join(root, "inventory.tsv"))
	if err != nil {
		t.Skipf("the Flink savepoints are not there (../shared/flink-savepoints from the module root): %v", err)
	}
	var out []string
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Split(line, "\t"); i > 0 && len(f) > 1 {
			out = append(out, filepath.Join(root, strings.TrimSuffix(f[0], "/_metadata")))
		}
	}
	return out
}

// Through the seam, every fixture's segments count exactly the entries
// its iterators give, key group by key group, read from every state at
// once (as inspect --scan and verify read them); and every key whose Java
// hashCode is defined by value lies in the key group Flink's hash gives it,
// as the key serializer's KeyGrouper computes it.
func TestSegmentsCountTheEntries(t *testing.T) {
	ctx := context.Background()
	var keys, entries int
	for _, dir := range fixtures(t) {
		src, err := flinksource.Open(ctx, storage.LocalDir(dir), flinkfmt.Options{})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		m := src.Metadata()
		if m.CheckRead(-1) != nil {
			continue // the changelog layout
		}
		segs, err := savepoint.AllSegments(ctx, src)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, seg := range segs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				op := &m.Operators[seg.Ref.Operator]
				kg := op.Key.External.(serializers.KeyGrouper)
				key, err := serializers.Restore(op.Key)
				if err != nil {
					t.Error(err)
					return
				}
				it := savepoint.SegmentEntries(ctx, src, seg)
				defer it.Close()
				var n uint64
				seen := map[string]bool{}
				hashed := 0
				for it.Next() {
					e := it.Entry()
					n++
					if e.KeyGroup != seg.KeyGroup {
						t.Errorf("%s: %s: an entry of key group %d in the segment of %d", dir, m.Describe(seg.Ref), e.KeyGroup, seg.KeyGroup)
					}
					v, err := key.DecodeAny(e.Key)
					if err != nil {
						t.Errorf("%s: %s: key: %v", dir, m.Describe(seg.Ref), err)
						continue
					}
					if g, ok := kg.KeyGroup(v, op.MaxParallelism); ok {
						if g != e.KeyGroup {
							t.Errorf("%s: %s: key %v hashes to key group %d, read from %d", dir, m.Describe(seg.Ref), v, g, e.KeyGroup)
						}
						if !seen[string(e.Key)] {
							seen[string(e.Key)] = true
							hashed++
						}
					}
				}
				if err := it.Err(); err != nil {
					t.Errorf("%s: %s: %v", dir, m.Describe(seg.Ref), err)
				}
				if n != seg.Entries {
					t.Errorf("%s: %s: key group %d: the segment counts %d entries, the iterator gives %d", dir, m.Describe(seg.Ref), seg.KeyGroup, seg.Entries, n)
				}
				mu.Lock()
				keys += hashed
				entries += int(n)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	t.Logf("%d entries; %d distinct keys (per state and key group) checked against Flink's key-group hash", entries, keys)
	if keys == 0 {
		t.Error("no key was checked against its key group")
	}
}

// A changelog checkpoint opens, lists its keyed state as unread, naming
// the layout, and refuses a tool that needs every entry.
func TestChangelogIsUnread(t *testing.T) {
	var dir string
	for _, d := range fixtures(t) {
		if strings.HasSuffix(d, "new-stateful-udf-migration-itcase-flink1.17-hashmap-checkpoint") {
			dir = d
		}
	}
	src, err := flinksource.Open(context.Background(), storage.LocalDir(dir), flinkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = src.Metadata().CheckRead(-1)
	if !errors.Is(err, savepoint.ErrUnsupported) || !strings.Contains(err.Error(), "changelog layout") {
		t.Errorf("CheckRead = %v, want ErrUnsupported naming the changelog layout", err)
	}
	if got := src.Layout().String(); !strings.Contains(got, "changelog") {
		t.Errorf("layout %q does not name the changelog layout", got)
	}
}

// An operator is found by its uid, by its ID in any case, by a uid that
// only Flink's uid hash matches (metadata before version 5 records none),
// or by a name only it has.
func TestFindOperator(t *testing.T) {
	ctx := context.Background()
	byName := map[string]string{}
	for _, d := range fixtures(t) {
		byName[filepath.Base(d)] = d
	}
	v5, err := flinksource.Open(ctx, storage.LocalDir(byName["new-stateful-udf-migration-itcase-flink2.0-hashmap-savepoint"]), flinkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v4, err := flinksource.Open(ctx, storage.LocalDir(byName["new-stateful-udf-migration-itcase-flink1.18-hashmap-savepoint"]), flinkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const uid, id = "CheckpointingKeyedStateFlatMap1", "d5c8b168c6cbfe8c507a10f88b325243"
	for _, c := range []struct {
		src *flinksource.Source
		ref string
	}{{v5, uid}, {v5, id}, {v5, strings.ToUpper(id)}, {v4, uid}, {v4, id}} {
		i, err := c.src.Metadata().FindOperator(c.ref)
		if err != nil {
			t.Errorf("%s: %v", c.ref, err)
			continue
		}
		if got := c.src.Metadata().Operators[i].ID; got != id {
			t.Errorf("%s found operator %s", c.ref, got)
		}
	}
	if _, err := v5.Metadata().FindOperator("Flat Map"); err == nil || !strings.Contains(err.Error(), "2 operators are named") {
		t.Errorf("a name two operators have: %v", err)
	}
	if m := v4.Metadata(); m.Operators[1].UID != m.Operators[1].ID {
		t.Errorf("without a recorded uid, an operator is named by its ID, not %q", m.Operators[1].UID)
	}
}
