package flinksource_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// walked is what CountSegments gave: per segment (ref and key group), its
// entries rendered.
type walked map[string][]string

func segName(m *savepoint.Metadata, ref savepoint.StateRef, kg int) string {
	return fmt.Sprintf("%s kg %d", m.Describe(ref), kg)
}

func render(e *savepoint.Entry, sizes bool) string {
	if sizes {
		return fmt.Sprintf("value of %d bytes", len(e.Value))
	}
	return fmt.Sprintf("%x/%x/%x/%x/%d/%d", e.Key, e.Namespace, e.MapKey, e.Value, e.Timestamp, e.KeyGroup)
}

// walk runs CountSegments on n workers and gathers what visit was given:
// with sizes, only the sizes of the values of keyed states, read in
// batches as a scan reads them.
func walk(ctx context.Context, src *flinksource.Source, n int, sizes bool) ([]savepoint.Segment, walked, error) {
	m := src.Metadata()
	var mu sync.Mutex
	got := walked{}
	segs, err := src.CountSegments(ctx, n, func(w int, ref savepoint.StateRef, it savepoint.EntryIterator) error {
		if w < 0 || w >= n {
			return fmt.Errorf("worker %d of %d", w, n)
		}
		var es []string
		if sizes && !ref.Timer {
			batch := make([]int, 3)
			for {
				k := savepoint.NextValues(it, false, batch, make([]int64, 3))
				for _, n := range batch[:k] {
					es = append(es, fmt.Sprintf("value of %d bytes", n))
				}
				if k < len(batch) {
					break
				}
			}
			if len(es) == 0 {
				return fmt.Errorf("%s: a segment without entries", m.Describe(ref))
			}
			mu.Lock()
			defer mu.Unlock()
			name := m.Describe(ref)
			got[name] = append(got[name], es...)
			return it.Err()
		}
		kg := -1
		for it.Next() {
			e := it.Entry()
			if kg >= 0 && e.KeyGroup != kg {
				return fmt.Errorf("%s: key groups %d and %d in one segment", m.Describe(ref), kg, e.KeyGroup)
			}
			kg = e.KeyGroup
			es = append(es, render(e, false))
		}
		if err := it.Err(); err != nil {
			return err
		}
		if kg < 0 {
			return fmt.Errorf("%s: a segment without entries", m.Describe(ref))
		}
		mu.Lock()
		defer mu.Unlock()
		name := segName(m, ref, kg)
		got[name] = append(got[name], es...)
		return nil
	}, nil)
	return segs, got, err
}

// readAll reads every segment as a scan did before CountSegments: the
// segments, then each segment's entries; with sizes, as walk gives them.
func readAll(ctx context.Context, src savepoint.Source, segs []savepoint.Segment, sizes bool) (walked, error) {
	m := src.Metadata()
	out := walked{}
	for _, seg := range segs {
		it := savepoint.SegmentEntries(ctx, src, seg)
		name := segName(m, seg.Ref, seg.KeyGroup)
		sized := sizes && !seg.Ref.Timer
		if sized {
			// The key groups of a state are visited in any order.
			name = m.Describe(seg.Ref)
		}
		for it.Next() {
			out[name] = append(out[name], render(it.Entry(), sized))
		}
		err := it.Err()
		it.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// One read of every fixture through CountSegments gives the segments that
// AllSegments counts, in its order, and the entries that reading each
// segment gives, in their order, or their values' sizes in batches; so it
// does for an operator counted before the walk, which it reads segment by
// segment.
func TestCountSegmentsIsAllSegments(t *testing.T) {
	ctx := context.Background()
	var segments, entries, fixtures0 int
	for _, dir := range fixtures(t) {
		open := func() *flinksource.Source {
			src, err := flinksource.Open(ctx, storage.LocalDir(dir), flinkfmt.Options{})
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			return src
		}
		ref := open()
		if ref.Metadata().CheckRead(-1) != nil {
			continue // the changelog layout
		}
		want, err := savepoint.AllSegments(ctx, ref)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		wantEntries, err := readAll(ctx, ref, want, false)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		wantSizes, err := readAll(ctx, ref, want, true)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, es := range wantSizes {
			slices.Sort(es)
		}
		fixtures0++
		for _, counted := range []bool{false, true} {
			src := open()
			if counted {
				if _, err := savepoint.AllSegments(ctx, src); err != nil {
					t.Fatal(err)
				}
			}
			segs, got, err := walk(ctx, src, 3, false)
			if err != nil {
				t.Fatalf("%s (counted before: %v): %v", dir, counted, err)
			}
			_, gotSizes, err := walk(ctx, open(), 3, true)
			if err != nil {
				t.Fatalf("%s: sizes: %v", dir, err)
			}
			for _, es := range gotSizes {
				slices.Sort(es)
			}
			if !reflect.DeepEqual(gotSizes, wantSizes) {
				t.Errorf("%s: the walk's value sizes differ from the values' sizes", dir)
			}
			if !reflect.DeepEqual(segs, want) {
				t.Errorf("%s (counted before: %v): CountSegments gives\n%v\nAllSegments\n%v", dir, counted, segs, want)
			}
			if !reflect.DeepEqual(got, wantEntries) {
				t.Errorf("%s (counted before: %v): the walk's entries differ from the segments'", dir, counted)
			}
			if !slices.EqualFunc(src.Warnings(), ref.Warnings(), func(a, b savepoint.Warning) bool { return a == b }) {
				t.Errorf("%s: warnings %v, want %v", dir, src.Warnings(), ref.Warnings())
			}
		}
		segments += len(want)
		for _, es := range wantEntries {
			entries += len(es)
		}
	}
	t.Logf("%d fixtures, %d segments, %d entries walked", fixtures0, segments, entries)
	if entries == 0 {
		t.Error("no entry was walked")
	}
}

// A visit's error ends the walk and is what CountSegments returns.
func TestCountSegmentsStopsAtVisitError(t *testing.T) {
	ctx := context.Background()
	for _, dir := range fixtures(t) {
		src, err := flinksource.Open(ctx, storage.LocalDir(dir), flinkfmt.Options{})
		if err != nil || src.Metadata().CheckRead(-1) != nil {
			continue
		}
		if segs, err := savepoint.AllSegments(ctx, src); err != nil || len(segs) == 0 {
			continue
		}
		src, _ = flinksource.Open(ctx, storage.LocalDir(dir), flinkfmt.Options{})
		stop := fmt.Errorf("stop")
		visits := 0
		var mu sync.Mutex
		_, err = src.CountSegments(ctx, 1, func(int, savepoint.StateRef, savepoint.EntryIterator) error {
			mu.Lock()
			defer mu.Unlock()
			visits++
			return stop
		}, nil)
		if err != stop || visits != 1 {
			t.Fatalf("%s: CountSegments returned %v after %d visits, want the visit's error after one", dir, err, visits)
		}
		return
	}
	t.Skip("no fixture with keyed entries")
}

// The progress CountSegments reports never goes back and ends where the
// segments' lengths add up to, never past the total.
func TestCountSegmentsProgress(t *testing.T) {
	ctx := context.Background()
	checked := 0
	for _, dir := range fixtures(t) {
		src, err := flinksource.Open(ctx, storage.LocalDir(dir), flinkfmt.Options{})
		if err != nil || src.Metadata().CheckRead(-1) != nil {
			continue
		}
		var mu sync.Mutex
		var last, total int64
		segs, err := src.CountSegments(ctx, 2, func(_ int, _ savepoint.StateRef, it savepoint.EntryIterator) error {
			for it.Next() {
			}
			return nil
		}, func(done, all int64) {
			mu.Lock()
			defer mu.Unlock()
			if done < last {
				t.Errorf("%s: progress went back from %d to %d", dir, last, done)
			}
			last, total = done, all
		})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		var sum int64
		for _, s := range segs {
			sum += s.Length
		}
		if last != sum || total < last {
			t.Errorf("%s: progress ends at %d of %d, the segments' lengths add up to %d", dir, last, total, sum)
		}
		if sum > 0 {
			checked++
		}
	}
	if checked == 0 {
		t.Skip("no fixture with keyed bytes")
	}
}

// The iterator a walk gives each segment says where the segment lies, as
// its figures say once it is counted: an error about an entry of it can
// name its file and offset before the walk ends.
func TestCountSegmentsPlacesItsSegments(t *testing.T) {
	ctx := context.Background()
	placed := 0
	for _, dir := range fixtures(t) {
		src, err := flinksource.Open(ctx, storage.LocalDir(dir), flinkfmt.Options{})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if src.Metadata().CheckRead(-1) != nil {
			continue // the changelog layout
		}
		var mu sync.Mutex
		var got []savepoint.Segment
		segs, err := src.CountSegments(ctx, 3, func(_ int, ref savepoint.StateRef, it savepoint.EntryIterator) error {
			p, ok := it.(interface{ Segment() savepoint.Segment })
			if !ok {
				return fmt.Errorf("%s: the walk's iterator does not say where its segment lies", src.Metadata().Describe(ref))
			}
			seg := p.Segment()
			if seg.Ref != ref {
				return fmt.Errorf("a segment of %s placed as one of %s", src.Metadata().Describe(ref), src.Metadata().Describe(seg.Ref))
			}
			mu.Lock()
			defer mu.Unlock()
			got = append(got, seg)
			return nil
		}, nil)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		where := map[string]savepoint.Segment{}
		for _, s := range segs {
			where[segName(src.Metadata(), s.Ref, s.KeyGroup)] = s
		}
		for _, g := range got {
			s, ok := where[segName(src.Metadata(), g.Ref, g.KeyGroup)]
			if !ok || s.File != g.File || s.Offset != g.Offset {
				t.Errorf("%s: %s placed in %q at %d, counted in %q at %d", dir, segName(src.Metadata(), g.Ref, g.KeyGroup), g.File, g.Offset, s.File, s.Offset)
			}
		}
		placed += len(got)
	}
	t.Logf("%d segments placed", placed)
	if placed == 0 {
		t.Error("no segment was placed")
	}
}
