package flinkfmt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/sstbuild"
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

// BenchmarkNativeHandle reads a native handle of 200,000 ValueState<Long>
// keys and 50,000 three-element lists (their elements in two tables) at
// max parallelism 128, in four Snappy tables as flushes leave them, key
// group by key group, without decoding values: the cost of the merge and
// of parsing composite keys. Compare with BenchmarkMergeKeyGroups of
// package rocksdb for the merge alone.
func BenchmarkNativeHandle(b *testing.B) {
	const keys, lists = 200_000, 50_000
	parts := make([][]sstbuild.Entry, 2)
	var items [2][]sstbuild.Entry
	for i := 0; i < keys; i++ {
		key := nkey(i*128/keys, fmt.Sprintf("user-%07d", i))
		parts[i%2] = append(parts[i%2], set(key, uint64(i+1), long(int64(i))))
		if i < lists {
			items[0] = append(items[0], set(key, uint64(keys+i+1), long(1, 2)))
			items[1] = append(items[1], merge(key, uint64(keys+lists+i+1), long(3)))
		}
	}
	dir := b.TempDir()
	var files []nativeFile
	for i, p := range parts {
		files = append(files, relFile(fmt.Sprintf("%06d.sst", i+1), fmt.Sprintf("v%d", i), nativeTable(b, "visits", p, sstbuild.Options{ColumnFamilyID: 1})))
		files = append(files, relFile(fmt.Sprintf("%06d.sst", i+3), fmt.Sprintf("i%d", i), nativeTable(b, "items", items[i], sstbuild.Options{ColumnFamilyID: 2})))
	}
	writeNative(b, dir, ".", 128, keygroup.Range{Start: 0, End: 127}, nativeHeader(), nil, files)
	ctx := context.Background()
	want := keys + 3*lists
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := Open(ctx, storage.LocalDir(dir), Options{})
		if err != nil {
			b.Fatal(err)
		}
		k, err := r.Keyed(ctx, r.Metadata().Operators[0])
		if err != nil {
			b.Fatal(err)
		}
		it := k.Entries(ctx, -1, keygroup.All(128))
		n := 0
		for it.Next() {
			n++
		}
		if it.Err() != nil || n != want {
			b.Fatalf("%d entries, %v", n, it.Err())
		}
	}
	b.ReportMetric(float64(want)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
