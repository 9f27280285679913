package inspect_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// batchOnly gives its source's entries through iterators that batch values
// but count no TTL times themselves, so that the scan counts every time.
type batchOnly struct{ savepoint.Source }

func (s batchOnly) Entries(ctx context.Context, ref savepoint.StateRef, kgs keygroup.Range) savepoint.EntryIterator {
	return batcher{s.Source.Entries(ctx, ref, kgs)}
}

type batcher struct{ savepoint.EntryIterator }

func (b batcher) NextValues(sizes []int, lastModified []int64) int {
	return b.EntryIterator.(savepoint.ValueBatcher).NextValues(sizes, lastModified)
}

// A scan whose iterators count the TTL ages against the cuts gives the
// report that counting every time gives, on every checked-in savepoint of
// format version 2 (whose index holds histograms), at the creation time,
// at times off every bucket boundary, and at times far from the
// histogram's anchor, where the cuts share buckets and the scan counts the
// times itself.
func TestScanAgesCountedByTheIterator(t *testing.T) {
	dirs, _ := filepath.Glob("../testdata/savepoints/v2/*")
	if len(dirs) == 0 {
		t.Skip("no checked-in savepoints")
	}
	ctx := context.Background()
	aged := 0
	for _, dir := range dirs {
		src := sptest.Open(t, dir)
		created := src.Metadata().CreatedAt
		for _, now := range []int64{created, created + 1_234_567, created - 3*24*3600*1000 - 17, created + 10*365*24*3600*1000, 0} {
			opts := inspect.Options{Now: now, Scan: true, Workers: 1}
			counted, err := inspect.Inspect(ctx, src, opts)
			if err != nil {
				t.Fatal(err)
			}
			each, err := inspect.Inspect(ctx, batchOnly{src}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(counted.States, each.States) {
				t.Errorf("%s at %d: the scan's figures differ when the iterator counts the ages:\n%+v\n%+v", filepath.Base(dir), now, counted.States, each.States)
			}
			for _, s := range counted.States {
				if s.Ages != nil && s.Entries > 0 {
					aged++
				}
			}
		}
	}
	if aged == 0 {
		t.Fatal("no TTL state with entries: the test proves nothing")
	}
}
