// Package flinkgen writes a synthetic Apache Flink savepoint in the
// canonical layout, through the flinkfmt writer, for benchmarks and tests
// of the Flink rewrites: the shape of the sessions-large benchmark (the
// SessionFeatures job keyed by a String user id: a category-counts map
// state with TTL, an Avro session value per open session, one event-time
// timer per open session), with the serializer snapshots a Flink job of
// that shape records. The data is a function of the configuration only.
//
// It sits beside internal/spgen, which writes stateproc's own savepoints
// of the same job; bench/genflink is its command.
package flinkgen

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// Config is the savepoint to write.
type Config struct {
	Seed uint64
	// Users is the number of keys; each has 10 to 30 of Categories map
	// entries (20 on average), so a million users hold about 20 million.
	Users      int
	Categories int
	// OpenPercent of the users have an open session: a session value and
	// its timer.
	OpenPercent int
	// Now is the savepoint's time in epoch milliseconds; every last-access
	// time lies in the Span before it.
	Now  int64
	Span time.Duration
	// Parallelism and MaxParallelism of the keyed operator.
	Parallelism, MaxParallelism int
	// Compressed writes every key group as a Snappy stream.
	Compressed bool
}

// SessionsLarge is the configuration of the sessions-large benchmark's
// Flink twin: a million users, parallelism 2, max parallelism 128, last
// accesses within six days of the savepoint, so that under the 7-day TTL
// every entry is alive.
func SessionsLarge() Config {
	return Config{Seed: 1, Users: 1_000_000, Categories: 40, OpenPercent: 10, Now: 1_700_000_000_000, Span: 6 * 24 * time.Hour,
		Parallelism: 2, MaxParallelism: 128}
}

// Names of the savepoint's operator and states, as the Flink job names them.
const (
	OperatorUID   = "session-features"
	OperatorName  = "SessionFeatures"
	CountsState   = "category-counts"
	SessionState  = "session"
	EventTimers   = "_timer_state/event_user-timers"
	ProcTimers    = "_timer_state/processing_user-timers"
	SessionSchema = `{"type":"record","name":"SessionAgg","namespace":"stateproc.examples.sessionfeatures","fields":[{"name":"start_ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"last_ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"clicks","type":"int"}]}`
	// SessionGap is how long after its last click a session's timer fires.
	SessionGap = 30 * time.Minute
	// CountsTTL is the TTL the job gives category-counts, which Flink does
	// not record in the savepoint.
	CountsTTL = 7 * 24 * time.Hour
)

// Stats are what was written.
type Stats struct {
	Users, Sessions uint64
	// Entries counts the entries of every state: map entries, session
	// values and timers.
	Entries, CountEntries uint64
	Bytes                 int64
	Elapsed               time.Duration
}

// The header's state ids, in the order of header().
const (
	countsID = iota
	sessionID
	eventTimersID
	procTimersID
)

// header is the keyed-stream header of the job: String keys; the map of
// String to TTL-wrapped Long; the Avro session; the two timer services
// of the operator's "user-timers", keyed by String in the void namespace.
func header(compressed bool) (*flinkfmt.CanonicalHeader, error) {
	str := flinkfmt.SimpleSnapshot(flinkfmt.StringSnapshotClass)
	void := flinkfmt.SimpleSnapshot(flinkfmt.VoidNamespaceClass)
	ttlLong, err := flinkfmt.TTLSnapshot(flinkfmt.SimpleSnapshot(flinkfmt.LongSnapshotClass))
	if err != nil {
		return nil, err
	}
	counts, err := flinkfmt.MapSnapshot(str, ttlLong)
	if err != nil {
		return nil, err
	}
	session, err := flinkfmt.AvroSnapshot("org.apache.avro.generic.GenericRecord", SessionSchema)
	if err != nil {
		return nil, err
	}
	timer, err := flinkfmt.TimerSnapshot(str, void)
	if err != nil {
		return nil, err
	}
	return flinkfmt.NewCanonicalHeader(str, compressed, []flinkfmt.StateSpec{
		{Name: CountsState, Kind: flinkfmt.Map, Namespace: void, Value: counts},
		{Name: SessionState, Kind: flinkfmt.Value, Namespace: void, Value: session},
		{Name: EventTimers, Kind: flinkfmt.Timers, Value: timer},
		{Name: ProcTimers, Kind: flinkfmt.Timers, Value: timer},
	})
}

// UserKey is the id of user u.
func UserKey(u int) string { return fmt.Sprintf("user-%07d", u) }

// Category is the name of category c.
func Category(c int) string { return fmt.Sprintf("category-%02d", c) }

// appendString is StringValue.writeString of an ASCII string.
func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)+1))
	return append(b, s...)
}

// user is one user's state, drawn from its own random stream.
type user struct {
	key        []byte
	categories []int
	counts     []int64
	access     []int64
	open       bool
	session    [3]int64 // start, last, clicks
}

func (c *Config) user(u int, scratch *user) {
	rng := rand.New(rand.NewPCG(c.Seed, uint64(u)))
	scratch.key = appendString(scratch.key[:0], UserKey(u))
	n := min(c.Categories, 10+rng.IntN(21))
	perm := scratch.categories[:0]
	for i := range c.Categories {
		perm = append(perm, i)
	}
	for i := range n {
		j := i + rng.IntN(len(perm)-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	scratch.categories = perm[:n]
	// Category names have one length, so their order is their number's.
	slices.Sort(scratch.categories)
	scratch.counts, scratch.access = scratch.counts[:0], scratch.access[:0]
	span := max(1, c.Span.Milliseconds())
	var last int64
	for range n {
		t := c.Now - rng.Int64N(span)
		scratch.counts = append(scratch.counts, 1+rng.Int64N(50))
		scratch.access = append(scratch.access, t)
		last = max(last, t)
	}
	scratch.open = rng.IntN(100) < c.OpenPercent
	if scratch.open {
		scratch.session = [3]int64{last - rng.Int64N(2*SessionGap.Milliseconds()), last, 1 + rng.Int64N(200)}
	}
}

// WriteDir writes the savepoint into the directory dir, staged beside it
// and published in one step (see storage.Stage; force replaces dir), and
// returns what it wrote. On an error nothing is left at dir.
func WriteDir(ctx context.Context, dir string, force bool, c Config) (*Stats, error) {
	st, err := storage.Stage(dir, force)
	if err != nil {
		return nil, err
	}
	stats, err := Write(ctx, st, c)
	if err == nil {
		err = st.Publish(ctx)
	}
	if err != nil {
		st.Abort()
		return nil, err
	}
	return stats, nil
}

// Write writes the savepoint into dst, the _metadata last, and returns
// what it wrote. It neither publishes nor aborts dst.
func Write(ctx context.Context, dst storage.Staging, c Config) (*Stats, error) {
	if err := keygroup.Validate(c.Parallelism, c.MaxParallelism); err != nil {
		return nil, err
	}
	if c.Users < 0 || c.Categories < 1 || c.Categories > 100 {
		return nil, fmt.Errorf("flinkgen: %d users of %d categories", c.Users, c.Categories)
	}
	start := time.Now()
	h, err := header(c.Compressed)
	if err != nil {
		return nil, err
	}
	// Users by key group, each key group's in the order of their keys.
	byKG := make([][]int32, c.MaxParallelism)
	for u := range c.Users {
		// User ids are ASCII: Java's hashCode of the decoded string is that
		// of the stored UTF-16 units.
		h, _ := keyhash.HashCode(UserKey(u))
		kg := keyhash.KeyGroup(h, c.MaxParallelism)
		byKG[kg] = append(byKG[kg], int32(u))
	}
	st := &Stats{Users: uint64(c.Users)}
	id := flinkfmt.UIDHash(OperatorUID)
	op := &flinkfmt.Operator{ID: id, Parallelism: c.Parallelism, MaxParallelism: c.MaxParallelism}
	op.Subtasks = make([]flinkfmt.Subtask, c.Parallelism)
	var entries, counts, sessions atomic.Uint64
	var bytes atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for s := range c.Parallelism {
		g.Go(func() error {
			kgs := keygroup.ForSubtask(s, c.Parallelism, c.MaxParallelism)
			w := flinkfmt.NewStreamWriter(gctx, dst, fmt.Sprintf("%08x-0000-5000-8000-%012x", s, id[:6]), flinkfmt.DefaultInlineThreshold)
			defer w.Close()
			cw, err := flinkfmt.NewCanonicalWriter(w, h, c.MaxParallelism, kgs)
			if err != nil {
				return err
			}
			var n subtaskCounts
			for kg := kgs.Start; kg <= kgs.End; kg++ {
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := c.writeKeyGroup(cw, kg, byKG[kg], &n); err != nil {
					return err
				}
			}
			offsets, err := cw.Finish()
			if err != nil {
				return err
			}
			handle, err := w.Finish()
			if err != nil {
				return err
			}
			op.Subtasks[s] = flinkfmt.Subtask{Index: s, ManagedKeyed: &flinkfmt.KeyedHandle{Kind: flinkfmt.KeyedSavepointKeyGroups,
				KeyGroups: kgs, Offsets: offsets, Stream: handle}}
			entries.Add(n.entries)
			counts.Add(n.counts)
			sessions.Add(n.sessions)
			bytes.Add(w.Pos())
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// Metadata version 3 (Flink 1.11 to 1.15, read by every Flink since):
	// versions 4 and 5 end with Java-serialized checkpoint properties.
	meta := &flinkfmt.Metadata{Version: 3, CheckpointID: 1, Operators: []*flinkfmt.Operator{op}}
	b, err := flinkfmt.EncodeMetadata(meta)
	if err != nil {
		return nil, err
	}
	f, err := dst.Create(ctx, flinkfmt.MetadataFile)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	st.Entries, st.CountEntries, st.Sessions = entries.Load(), counts.Load(), sessions.Load()
	st.Bytes = bytes.Load() + int64(len(b))
	st.Elapsed = time.Since(start)
	return st, nil
}

type subtaskCounts struct{ entries, counts, sessions uint64 }

// writeKeyGroup writes the users of one key group, state by state in id
// order and in composite-key order within each, as RocksDB would.
func (c *Config) writeKeyGroup(cw *flinkfmt.CanonicalWriter, kg int, users []int32, n *subtaskCounts) error {
	if len(users) == 0 {
		return nil
	}
	all := make([]user, len(users))
	for i, u := range users {
		c.user(int(u), &all[i])
	}
	slices.SortFunc(all, func(a, b user) int { return slices.Compare(a.key, b.key) })
	var k, v []byte
	for i := range all {
		u := &all[i]
		for j, cat := range u.categories {
			k = appendString(append(append(k[:0], u.key...), 0), Category(cat))
			v = binary.BigEndian.AppendUint64(append(v[:0], 0), uint64(u.access[j]))
			v = binary.BigEndian.AppendUint64(v, uint64(u.counts[j]))
			if err := cw.Add(kg, countsID, k, v); err != nil {
				return err
			}
			n.entries++
			n.counts++
		}
	}
	for i := range all {
		u := &all[i]
		if !u.open {
			continue
		}
		// Flink's Avro DataOutputEncoder: longs and ints fixed-width.
		v = binary.BigEndian.AppendUint64(v[:0], uint64(u.session[0]))
		v = binary.BigEndian.AppendUint64(v, uint64(u.session[1]))
		v = binary.BigEndian.AppendUint32(v, uint32(u.session[2]))
		if err := cw.Add(kg, sessionID, append(append(k[:0], u.key...), 0), v); err != nil {
			return err
		}
		n.entries++
		n.sessions++
	}
	var timers []user
	for i := range all {
		if all[i].open {
			timers = append(timers, all[i])
		}
	}
	slices.SortFunc(timers, func(a, b user) int {
		if c := a.session[1] - b.session[1]; c != 0 {
			if c < 0 {
				return -1
			}
			return 1
		}
		return slices.Compare(a.key, b.key)
	})
	for i := range timers {
		u := &timers[i]
		k = binary.BigEndian.AppendUint64(k[:0], uint64(u.session[1]+SessionGap.Milliseconds())^1<<63)
		k = append(append(k, u.key...), 0)
		if err := cw.Add(kg, eventTimersID, k, nil); err != nil {
			return err
		}
		n.entries++
	}
	return nil
}
