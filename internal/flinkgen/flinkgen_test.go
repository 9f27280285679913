package flinkgen

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// Generate writes c into a new directory and returns it with the stats.
func generate(t *testing.T, c Config) (string, *Stats) {
	t.Helper()
	target := filepath.Join(t.TempDir(), "flink-sessions")
	st, err := storage.Stage(target, false)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := Write(context.Background(), st, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Publish(context.Background()); err != nil {
		t.Fatal(err)
	}
	return target, stats
}

// The generated savepoint reads back with Flink's layout reader: the
// operator and states of the job, every user with 10 to 30 categories
// whose last accesses lie in the span, the open sessions' Avro values and
// their timers at the session's end, every key in the key group of
// Flink's hash.
func TestGeneratedSavepointReadsBack(t *testing.T) {
	c := SessionsLarge()
	c.Users, c.Compressed = 3000, true
	dir, stats := generate(t, c)
	ctx := context.Background()
	r, err := flinkfmt.Open(ctx, storage.LocalDir(dir), flinkfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	op, err := r.Operator(OperatorUID)
	if err != nil || op.MaxParallelism != 128 || op.Parallelism != 2 || len(op.Subtasks) != 2 {
		t.Fatalf("%+v, %v", op, err)
	}
	k, err := r.Keyed(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Compressed || len(k.States) != 4 {
		t.Fatalf("compressed %v, %d states", k.Compressed, len(k.States))
	}
	counts, session := k.States[k.State(CountsState)], k.States[k.State(SessionState)]
	if counts.Kind != flinkfmt.Map || !counts.TTL || counts.MapKey.Type.Kind != typeser.KindString || counts.UserValue().Type.Kind != typeser.KindInt64 {
		t.Fatalf("category-counts: %+v", counts)
	}
	if session.Kind != flinkfmt.Value || session.Stored.Type.Kind != typeser.KindAvro {
		t.Fatalf("session: %+v", session)
	}
	perUser := map[string]int{}
	ends := map[string]int64{}
	timers := map[string]int64{}
	it := k.Entries(ctx, -1, keygroup.All(128))
	var n uint64
	for it.Next() {
		e := it.Entry()
		n++
		if kg, err := keyhash.KeyGroupOf(k.Key, e.Key, 128); err != nil || kg != e.KeyGroup {
			t.Fatalf("key % x in key group %d: %d, %v", e.Key, e.KeyGroup, kg, err)
		}
		key, err := k.Key.Decode(e.Key)
		if err != nil {
			t.Fatal(err)
		}
		user := key.(string)
		switch k.States[e.State].Name {
		case CountsState:
			v, err := counts.Stored.Decode(e.Value)
			if err != nil {
				t.Fatal(err)
			}
			tv := v.(typeser.TTLValue)
			if tv.LastAccess > c.Now || tv.LastAccess <= c.Now-c.Span.Milliseconds() || tv.Value.(int64) < 1 {
				t.Fatalf("%s: %+v", user, tv)
			}
			perUser[user]++
		case SessionState:
			v, err := session.Stored.Decode(e.Value)
			if err != nil {
				t.Fatal(err)
			}
			rec := v.(map[string]any)
			if fmt.Sprint(rec["clicks"]) == "0" {
				t.Fatalf("%s: %v", user, rec)
			}
			ends[user] = lastTS(t, rec["last_ts"]) + SessionGap.Milliseconds()
		case EventTimers:
			timers[user] = e.Timestamp
		default:
			t.Fatalf("an entry of %s", k.States[e.State].Name)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if n != stats.Entries || len(perUser) != c.Users || uint64(len(ends)) != stats.Sessions || len(timers) != len(ends) {
		t.Fatalf("%d entries (stats %d), %d users, %d sessions (stats %d), %d timers", n, stats.Entries, len(perUser), len(ends), stats.Sessions, len(timers))
	}
	total := 0
	for u, cats := range perUser {
		if cats < 10 || cats > 30 {
			t.Errorf("%s: %d categories", u, cats)
		}
		total += cats
	}
	if mean := float64(total) / float64(c.Users); mean < 19 || mean > 21 || uint64(total) != stats.CountEntries {
		t.Errorf("%.1f categories per user, %d map entries (stats %d)", mean, total, stats.CountEntries)
	}
	for u, end := range ends {
		if timers[u] != end {
			t.Errorf("%s: timer at %d, session ends at %d", u, timers[u], end)
		}
	}
	if open := 100 * len(ends) / c.Users; open < 8 || open > 12 {
		t.Errorf("%d%% of the users have a session", open)
	}
}

func lastTS(t *testing.T, v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case interface{ UnixMilli() int64 }:
		return x.UnixMilli()
	}
	t.Fatalf("last_ts %T", v)
	return 0
}

// The data is a function of the configuration: two runs give the same
// files.
func TestGenerateIsDeterministic(t *testing.T) {
	c := SessionsLarge()
	c.Users = 500
	a, _ := generate(t, c)
	b, _ := generate(t, c)
	la, _ := storage.LocalDir(a).List(context.Background())
	lb, _ := storage.LocalDir(b).List(context.Background())
	if fmt.Sprint(la) != fmt.Sprint(lb) || len(la) == 0 {
		t.Fatalf("%v and %v", la, lb)
	}
	for _, name := range la {
		if sum(t, filepath.Join(a, name)) != sum(t, filepath.Join(b, name)) {
			t.Errorf("%s differs", name)
		}
	}
}

func sum(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}
