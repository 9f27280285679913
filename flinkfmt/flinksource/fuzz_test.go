package flinksource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/storage"
)

// memDir is a directory of one _metadata file.
type memDir struct{ meta []byte }

type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

func (d memDir) Open(_ context.Context, name string) (storage.File, error) {
	if name != savepoint.MetadataFile {
		return nil, fs.ErrNotExist
	}
	return memFile{bytes.NewReader(d.meta)}, nil
}

func (d memDir) List(context.Context) ([]string, error) { return []string{savepoint.MetadataFile}, nil }

func (memDir) Location() string { return "fuzz" }

// FuzzSource reads a _metadata, whose small state lies inline, through the
// seam as the commands do: the model, every segment, every entry decoded
// and rendered as JSON, operator and broadcast state. Nothing may panic;
// every failure is bad input; what opens holds entries its segments count,
// and as many value sizes.
// Seeds are the fixtures' _metadata files of up to 64 KiB.
func FuzzSource(f *testing.F) {
	for _, dir := range fixtures(f) {
		b, err := os.ReadFile(filepath.Join(dir, savepoint.MetadataFile))
		if err == nil && len(b) <= 64<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx := context.Background()
		src, err := flinksource.Open(ctx, memDir{b}, flinkfmt.Options{MaxKeyGroupBytes: 1 << 20})
		if err != nil {
			if !savepoint.BadInput(err) && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Open: %v is not bad input", err)
			}
			return
		}
		m := src.Metadata()
		checkWalk(t, b, src)
		for i := range m.Operators {
			op := &m.Operators[i]
			for _, ref := range m.Refs(i) {
				segs, err := src.Segments(ctx, ref, keygroup.All(op.MaxParallelism))
				if err != nil {
					checkBad(t, err)
					break
				}
				for _, seg := range segs {
					readSegment(t, src, op, ref, seg)
				}
			}
			for _, s := range op.OperatorStates {
				for _, sub := range s.Subtasks {
					for _, e := range sub {
						decode(t, s.Element, e)
					}
				}
			}
			for _, s := range op.BroadcastStates {
				for _, e := range s.Entries {
					decode(t, s.Key, e.Key)
					decode(t, s.Value, e.Value)
				}
			}
		}
	})
}

func checkBad(t *testing.T, err error) {
	if !savepoint.BadInput(err) && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%v is not bad input", err)
	}
}

func readSegment(t *testing.T, src savepoint.Source, op *savepoint.Operator, ref savepoint.StateRef, seg savepoint.Segment) {
	m := src.Metadata()
	it := savepoint.SegmentEntries(context.Background(), src, seg)
	defer it.Close()
	var n uint64
	for it.Next() {
		e := it.Entry()
		n++
		decode(t, op.Key, e.Key)
		if ks := m.KeyedState(ref); ks != nil {
			decode(t, ks.Namespace, e.Namespace)
			decode(t, ks.Value, e.Value)
			if ks.Kind == savepoint.Map {
				decode(t, ks.MapKey, e.MapKey)
			}
		}
	}
	if err := it.Err(); err != nil {
		checkBad(t, err)
		return
	}
	if n != seg.Entries {
		t.Fatalf("%s: the segment of key group %d counts %d entries, the iterator gives %d", m.Describe(ref), seg.KeyGroup, seg.Entries, n)
	}
	if ref.Timer {
		return
	}
	// The sizes of the values in batches, as inspect --scan reads them.
	vit := savepoint.SegmentEntries(context.Background(), src, seg)
	defer vit.Close()
	sizes, times := make([]int, 3), make([]int64, 3)
	var sized uint64
	for {
		k := savepoint.NextValues(vit, false, sizes, times)
		sized += uint64(k)
		if k < len(sizes) {
			break
		}
	}
	if err := vit.Err(); err != nil {
		t.Fatalf("%s: key group %d: sizes fail where the entries do not: %v", m.Describe(ref), seg.KeyGroup, err)
	}
	if sized != n {
		t.Fatalf("%s: key group %d: %d entries, %d value sizes", m.Describe(ref), seg.KeyGroup, n, sized)
	}
}

// decode decodes b and renders it; a value that does not decode must say
// so with serializers.ErrDecode.
func decode(t *testing.T, snap serializers.Snapshot, b []byte) {
	ser, err := serializers.Restore(snap)
	if err != nil {
		t.Fatalf("%s: %v", snap, err)
	}
	v, err := ser.DecodeAny(b)
	if err != nil {
		if !errors.Is(err, serializers.ErrDecode) {
			t.Fatalf("%s: %v does not wrap ErrDecode", snap, err)
		}
		return
	}
	if _, err := json.Marshal(jsonvalue.For(snap)(v)); err != nil {
		t.Fatalf("%s: %v: %v", snap, v, err)
	}
}

// checkWalk reads what src opened once more through CountSegments, which
// must fail where AllSegments fails and give its segments where it does
// not; and both must fail as counting the entries one by one with Next
// fails, with the same error, and count what it counts where it does not.
func checkWalk(t *testing.T, b []byte, src savepoint.Source) {
	ctx := context.Background()
	if src.Metadata().CheckRead(-1) != nil {
		return
	}
	want, wantErr := savepoint.AllSegments(ctx, src)
	again, err := flinksource.Open(ctx, memDir{b}, flinkfmt.Options{MaxKeyGroupBytes: 1 << 20})
	if err != nil {
		t.Fatalf("the second Open fails where the first did not: %v", err)
	}
	third, err := flinksource.Open(ctx, memDir{b}, flinkfmt.Options{MaxKeyGroupBytes: 1 << 20})
	if err != nil {
		t.Fatalf("the third Open fails where the first did not: %v", err)
	}
	byNext, nextErr := countByNext(ctx, third)
	switch {
	case (nextErr != nil) != (wantErr != nil):
		t.Fatalf("AllSegments: %v; entry by entry: %v", wantErr, nextErr)
	case nextErr != nil && nextErr.Error() != wantErr.Error():
		t.Fatalf("AllSegments: %v; entry by entry: %v", wantErr, nextErr)
	case nextErr == nil:
		if err := sameCounts(want, byNext); err != nil {
			t.Fatalf("AllSegments: %v", err)
		}
	}
	got, _, err := walk(ctx, again, 2, false)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("CountSegments: %v; AllSegments: %v", err, wantErr)
	case err != nil:
		checkBad(t, err)
	case !reflect.DeepEqual(got, want):
		t.Fatalf("CountSegments gives %v, AllSegments %v", got, want)
	}
}
