package filesource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRead reads every split of a directory of 200,000 JSON lines
// and of 200,000 CSV lines (about 14 MB each, 4 MiB splits) into structs
// through the default decoders, and reports records and bytes per second.
func BenchmarkRead(b *testing.B) {
	const lines = 200_000
	for _, format := range []string{"jsonl", "csv"} {
		b.Run(format, func(b *testing.B) {
			dir := b.TempDir()
			var sb strings.Builder
			if format == "csv" {
				sb.WriteString("file,seq,key,ts\n")
			}
			for i := range lines {
				if format == "csv" {
					fmt.Fprintf(&sb, "a.csv,%d,k%d,%d\n", i, i%997, 1767225600000+int64(i)*10)
				} else {
					fmt.Fprintf(&sb, `{"file":"a.jsonl","seq":%d,"key":"k%d","ts":%d}`+"\n", i, i%997, 1767225600000+int64(i)*10)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "a."+format), []byte(sb.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			s, err := New(dir, Options[event]{SplitBytes: 4 << 20, EventTime: func(e event) int64 { return e.TS }})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(sb.Len()))
			ctx := context.Background()
			for b.Loop() {
				n := 0
				for i := range s.Splits() {
					r, err := s.Open(ctx, i, 0)
					if err != nil {
						b.Fatal(err)
					}
					for {
						_, _, ok, err := r.Next(ctx)
						if err != nil {
							b.Fatal(err)
						}
						if !ok {
							break
						}
						n++
					}
				}
				if n != lines {
					b.Fatalf("%d records, want %d", n, lines)
				}
			}
			b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
