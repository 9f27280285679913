package rocksdb

import (
	"encoding/binary"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/sstbuild"
	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
)

// BenchmarkMergeKeyGroups reads 100,000 ValueState keys spread over four
// tables (as four flushes leave them), key group by key group at max
// parallelism 128, each key once.
func BenchmarkMergeKeyGroups(b *testing.B) {
	const n, tables = 100_000, 4
	parts := make([][]sstbuild.Entry, tables)
	for i := 0; i < n; i++ {
		k := []byte{byte(i * 128 / n)}
		k = binary.BigEndian.AppendUint64(k, uint64(i))
		k = append(k, 0)
		parts[i%tables] = append(parts[i%tables], sstbuild.Entry{UserKey: k, Seq: uint64(i + 1), Kind: sstbuild.Set, Value: binary.BigEndian.AppendUint64(nil, uint64(i))})
	}
	var ts []*sst.Table
	for _, p := range parts {
		ts = append(ts, build(b, p, sstbuild.Options{Snappy: true, UserKeyIndex: true, DeltaIndex: true}))
	}
	cf, err := NewColumnFamily(ts, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		it := cf.NewIter()
		m := 0
		for kg := 0; kg < 128; kg++ {
			p, _ := KeyGroupPrefix(kg, 128)
			for ok := it.SeekPrefix(p); ok; ok = it.Next() {
				m++
			}
		}
		if it.Err() != nil || m != n {
			b.Fatalf("%d keys, %v", m, it.Err())
		}
		it.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}
