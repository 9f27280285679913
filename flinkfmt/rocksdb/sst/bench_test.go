package sst_test

import (
	"encoding/binary"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/internal/sstbuild"
)

// flinkLikeEntries are n ValueState entries as Flink lays them out: key
// group, 8-byte key, VoidNamespace; an 8-byte value.
func flinkLikeEntries(n int) []sstbuild.Entry {
	es := make([]sstbuild.Entry, n)
	for i := range es {
		k := make([]byte, 0, 10)
		k = append(k, byte(i*128/n))
		k = binary.BigEndian.AppendUint64(k, uint64(i))
		k = append(k, 0)
		es[i] = sstbuild.Entry{UserKey: k, Seq: uint64(n - i), Kind: sstbuild.Set, Value: binary.BigEndian.AppendUint64(nil, uint64(i))}
	}
	return es
}

// BenchmarkTableIter iterates a table of 100,000 entries in 4 KiB Snappy
// blocks with Flink's index options, verifying every checksum.
func BenchmarkTableIter(b *testing.B) {
	for _, c := range []struct {
		name string
		ck   uint8
	}{{"CRC32c", sstbuild.CRC32c}, {"XXH3", sstbuild.XXH3}} {
		b.Run(c.name, func(b *testing.B) {
			const n = 100_000
			data, err := sstbuild.Build(flinkLikeEntries(n), sstbuild.Options{Snappy: true, Checksum: c.ck, UserKeyIndex: true, DeltaIndex: true})
			if err != nil {
				b.Fatal(err)
			}
			tab := open(b, data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				it := tab.NewIter()
				m := 0
				for ok := it.First(); ok; ok = it.Next() {
					m++
				}
				if it.Err() != nil || m != n {
					b.Fatalf("%d entries, %v", m, it.Err())
				}
				it.Close()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}
