package flinkfmt

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// BenchmarkReadFixtures opens every reference savepoint and iterates and
// decodes every keyed entry it can read: the cost of the metadata, headers,
// serializer snapshots and entries of real Flink savepoints.
func BenchmarkReadFixtures(b *testing.B) {
	root, rows := inventory(b)
	ctx := context.Background()
	entries := 0
	for i := 0; i < b.N; i++ {
		entries = 0
		for _, row := range rows {
			r, err := Open(ctx, storage.LocalDir(filepath.Join(root, row.dir)), Options{})
			if err != nil {
				b.Fatal(err)
			}
			for _, op := range r.Metadata().Operators {
				k, err := r.Keyed(ctx, op)
				if err != nil {
					continue
				}
				it := k.Entries(ctx, -1, keygroup.All(op.MaxParallelism))
				for it.Next() {
					e := it.Entry()
					m := k.States[e.State]
					if m.Kind != Timers && !e.Null {
						if _, err := m.Stored.Decode(e.Value); err != nil {
							b.Fatal(err)
						}
					}
					entries++
				}
				if err := it.Err(); err != nil && !errors.Is(err, ErrUnsupported) {
					b.Fatal(err)
				}
			}
		}
	}
	b.ReportMetric(float64(entries), "entries/op")
}
