package snapshotfmt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
)

// loadGolden reads a checked-in savepoint of format version v into memory.
func loadGolden(t *testing.T, v Version, name string) *memDir {
	t.Helper()
	dir := filepath.Join("..", "testdata", "savepoints", "v"+string(rune('0'+v)), name)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("golden savepoint not available: %v", err)
	}
	d := newMemDir()
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		d.files[e.Name()] = b
	}
	return d
}

// The frozen savepoints of format version 1 read forever, and hold what
// the savepoints the same jobs write now in version 2 hold: the same
// model, the same figures and the same entries. The value-size histograms
// of version 2 are what a tally of version 1's data gives.
func TestFrozenVersion1ReadsAsVersion2(t *testing.T) {
	ctx := context.Background()
	names, _ := filepath.Glob(filepath.Join("..", "testdata", "savepoints", "v1", "*", MetadataName))
	if len(names) == 0 {
		t.Skip("no frozen savepoints under testdata/savepoints/v1")
	}
	for _, n := range names {
		name := filepath.Base(filepath.Dir(n))
		t.Run(name, func(t *testing.T) {
			r1, err := Open(ctx, loadGolden(t, Version1, name))
			if err != nil {
				t.Fatal(err)
			}
			r2, err := Open(ctx, loadGolden(t, Version2, name))
			if err != nil {
				t.Fatal(err)
			}
			if r1.Version() != Version1 || r2.Version() != Version2 {
				t.Fatalf("versions %d and %d", r1.Version(), r2.Version())
			}
			if err := verify(ctx, r1); err != nil {
				t.Fatalf("version 1: %v", err)
			}
			if err := verify(ctx, r2); err != nil {
				t.Fatalf("version 2: %v", err)
			}
			m1, m2 := *r1.Metadata(), *r2.Metadata()
			if m1.Watermark != -1<<63 {
				t.Errorf("version 1 reads watermark %d, want the lowest", m1.Watermark)
			}
			m1.Watermark, m2.Watermark = 0, 0
			if !reflect.DeepEqual(m1, m2) {
				t.Fatalf("the models differ:\n%+v\n%+v", m1, m2)
			}
			total := 0
			for op := range r1.idx.segments {
				s1, s2 := r1.idx.segments[op], r2.idx.segments[op]
				if len(s1) != len(s2) {
					t.Fatalf("operator %d: %d segments, then %d", op, len(s1), len(s2))
				}
				for i := range s1 {
					a, b := s1[i], s2[i]
					if a.Sizes != nil || a.Modified != nil {
						t.Fatalf("a version 1 segment has histograms")
					}
					ttlOn := !b.Ref.Timer && m2.Operators[op].States[b.Ref.State].TTL != nil
					switch {
					case b.Ref.Timer && (b.Sizes != nil || b.Modified != nil):
						t.Fatalf("a timer segment has histograms")
					case !b.Ref.Timer && b.Sizes.Total() != b.Entries, ttlOn && b.Modified.Total() != b.Entries:
						t.Fatalf("key group %d: histograms count %d and %d of %d entries", b.KeyGroup, b.Sizes.Total(), b.Modified.Total(), b.Entries)
					}
					want := b.Stats
					want.Sizes, want.Modified, want.Anchor = nil, nil, 0
					if a.Ref != b.Ref || !reflect.DeepEqual(a.Stats, want) {
						t.Fatalf("segment %d of operator %d: %+v, then %+v", i, op, a, b)
					}
					compareEntries(t, r1, a, r2, b)
					if !b.Ref.Timer {
						tl, err := NewTally(r1.Metadata(), a.Ref, a.KeyGroup)
						if err != nil {
							t.Fatal(err)
						}
						it := r1.iterate(ctx, a)
						for it.Next() {
							if err := tl.Add(it.Entry()); err != nil {
								t.Fatal(err)
							}
						}
						it.Close()
						if got := tl.Stats().Sizes; !reflect.DeepEqual(got, b.Sizes) {
							t.Fatalf("key group %d: version 1's data tallies value sizes %v, version 2's index %v", a.KeyGroup, got, b.Sizes)
						}
					}
					total++
				}
			}
			if total == 0 {
				t.Fatal("no segments compared")
			}
		})
	}
}

func compareEntries(t *testing.T, r1 *Reader, a savepoint.Segment, r2 *Reader, b savepoint.Segment) {
	t.Helper()
	ctx := context.Background()
	i1, i2 := r1.iterate(ctx, a), r2.iterate(ctx, b)
	defer i1.Close()
	defer i2.Close()
	n := 0
	for i1.Next() {
		if !i2.Next() {
			t.Fatalf("key group %d: version 2 ends after %d entries: %v", a.KeyGroup, n, i2.Err())
		}
		e1, e2 := i1.Entry(), i2.Entry()
		if !bytes.Equal(e1.Key, e2.Key) || !sameEntry(e1, e2) {
			t.Fatalf("key group %d entry %d: %+v, then %+v", a.KeyGroup, n, e1, e2)
		}
		n++
	}
	if i2.Next() || i1.Err() != nil || i2.Err() != nil {
		t.Fatalf("key group %d: after %d entries: %v, %v", a.KeyGroup, n, i1.Err(), i2.Err())
	}
}

// An index whose histogram disagrees with the data is corruption that
// names the data file and the key group, found when the segment is read;
// an index whose histogram disagrees with its own figures is refused on
// opening.
func TestHistogramsAreCheckedAgainstTheData(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(s *savepoint.Segment) bool
		open   bool // refused on opening
		want   string
	}{
		{"value size moved to another bucket", func(s *savepoint.Segment) bool {
			s.Sizes[0].Bucket++
			return len(s.Sizes) == 1
		}, false, "value sizes disagree with the index's histogram"},
		{"last-modified time moved to another bucket", func(s *savepoint.Segment) bool {
			if len(s.Modified) != 1 {
				return false
			}
			s.Modified[0].Bucket--
			return true
		}, false, "last-modified times disagree with the index's histogram"},
		{"a count too many", func(s *savepoint.Segment) bool {
			s.Sizes[len(s.Sizes)-1].Count++
			return true
		}, true, "value-size histogram counts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, m, idx := decodedSmallOf(t, loadGolden(t, Version2, "gateway-p1-heap"))
			var changed *savepoint.Segment
			for op := range idx.segments {
				for i := range idx.segments[op] {
					s := &idx.segments[op][i]
					if changed == nil && s.Modified != nil && tc.change(s) {
						changed = s
					}
				}
			}
			if changed == nil {
				t.Fatal("no segment to change")
			}
			d.files[MetadataName] = metadataFile(encodeMetadataBody(m, idx))
			r, err := Open(ctx, d)
			if tc.open {
				e := wantCorrupt(t, err, tc.want)
				if e.File != MetadataName || e.KeyGroup != changed.KeyGroup {
					t.Fatalf("error at %s key group %d, want %s key group %d", e.File, e.KeyGroup, MetadataName, changed.KeyGroup)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e := wantCorrupt(t, verify(ctx, r), tc.want)
			if e.File != changed.File || e.KeyGroup != changed.KeyGroup {
				t.Fatalf("error at %s key group %d, want %s key group %d", e.File, e.KeyGroup, changed.File, changed.KeyGroup)
			}
		})
	}
}
