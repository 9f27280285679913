package inspect_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/ttl"
)

// BenchmarkScan times the scan loop alone, in process: the savepoint named
// by STATEPROC_SCAN_SAVEPOINT (a directory, for example a generated
// sessions-large), else a small one shaped like sessions-large (20 TTL map
// entries a key and a timer each). Top runs it with --top 10 as well.
//
//	STATEPROC_SCAN_SAVEPOINT=/tmp/bench/v2-0.5/sessions-large go test ./inspect -run X -bench Scan -cpuprofile cpu.prof
func BenchmarkScan(b *testing.B) {
	dir := os.Getenv("STATEPROC_SCAN_SAVEPOINT")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "sp")
		writeSessions(b, dir, 50_000)
	}
	ctx := context.Background()
	src, err := snapshotfmt.Open(ctx, storage.LocalDir(dir))
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	var entries uint64
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range segs {
		entries += s.Entries
	}
	for _, top := range []int{0, 10} {
		b.Run(fmt.Sprintf("top=%d", top), func(b *testing.B) {
			for b.Loop() {
				rep, err := inspect.Inspect(ctx, src, inspect.Options{Now: src.Metadata().CreatedAt, Scan: true, Top: top})
				if err != nil {
					b.Fatal(err)
				}
				if !rep.Scanned {
					b.Fatal("not scanned")
				}
			}
			b.ReportMetric(float64(entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

func writeSessions(b *testing.B, dir string, users int) {
	created := time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC).UnixMilli()
	week := ttl.New(7 * 24 * time.Hour)
	void := serializers.Snapshot{Kind: serializers.KindVoid}
	meta := &savepoint.Metadata{ID: 1, CreatedAt: created, Operators: []savepoint.Operator{{
		UID: "features", Name: "SessionFeatures", Parallelism: 2, MaxParallelism: 128,
		KeyHash: keygroup.Murmur3, Key: serializers.Snapshot{Kind: serializers.KindString},
		States: []savepoint.KeyedState{{Name: "category-counts", Kind: savepoint.Map, Namespace: void,
			MapKey: serializers.Snapshot{Kind: serializers.KindString}, Value: serializers.Snapshot{Kind: serializers.KindInt64}, TTL: &week}},
		Timers: []savepoint.TimerService{{Name: "session-end", Namespace: void}},
	}}}
	entries := map[savepoint.StateRef][]savepoint.Entry{}
	counts, timers := savepoint.StateRef{}, savepoint.StateRef{Timer: true}
	for u := range users {
		key := fmt.Appendf(nil, "user-%07d", u)
		for c := range 20 {
			v := binary.BigEndian.AppendUint64(nil, uint64(created-int64(u*c*1000)))
			v = binary.BigEndian.AppendUint64(v, uint64(c))
			entries[counts] = append(entries[counts], savepoint.Entry{Key: key, MapKey: fmt.Appendf(nil, "category-%02d", c), Value: v})
		}
		entries[timers] = append(entries[timers], savepoint.Entry{Key: key, Timestamp: created + int64(u)})
	}
	if err := sptest.Write(dir, meta, entries, snapshotfmt.Options{}); err != nil {
		b.Fatal(err)
	}
}
