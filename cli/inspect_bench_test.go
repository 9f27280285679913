package cli_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/ttl"
)

// BenchmarkInspectScan runs inspect --scan over a savepoint shaped like the
// brief's sessions-large, scaled down: users with 20 TTL map entries each
// and a timer. The whole-command benchmark against cat is
// bench/ratio over the generated sessions-large.
func BenchmarkInspectScan(b *testing.B) {
	const users = 50_000
	dir := filepath.Join(b.TempDir(), "sp")
	week := ttl.New(7 * 24 * time.Hour)
	void := serializers.Snapshot{Kind: serializers.KindVoid}
	meta := &savepoint.Metadata{ID: 1, CreatedAt: demoNow, Operators: []savepoint.Operator{{
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
			v := binary.BigEndian.AppendUint64(nil, uint64(demoNow-int64(u*c)))
			v = binary.BigEndian.AppendUint64(v, uint64(c))
			entries[counts] = append(entries[counts], savepoint.Entry{Key: key, MapKey: fmt.Appendf(nil, "category-%02d", c), Value: v})
		}
		entries[timers] = append(entries[timers], savepoint.Entry{Key: key, Timestamp: demoNow + int64(u)})
	}
	if err := sptest.Write(dir, meta, entries, snapshotfmt.Options{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if code := cli.Main(context.Background(), []string{"inspect", "--scan", dir}, io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
	b.ReportMetric(float64(users*21)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
