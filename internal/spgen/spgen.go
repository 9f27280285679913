package spgen

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
	"github.com/stateproc/stateproc/ttl"
)

// Config shapes a savepoint.
type Config struct {
	Seed uint64
	// Users are the keys of operator "features" (string keys), Accounts
	// those of "accounts" (int64 keys).
	Users, Accounts int
	Parallelism     int
	MaxParallelism  int
	// Now is the savepoint's creation time; TTL timestamps lie around it,
	// about half of them expired.
	Now         int64
	Compression snapshotfmt.Codec
	// Pad adds bytes to every session value, to reach a size.
	Pad int
}

// Operator indexes and state refs of the generated savepoint.
const (
	OpSource   = 0
	OpFeatures = 1
	OpAccounts = 2

	RefSession    = 0 // value, TTL 1d, void namespace
	RefCounts     = 1 // map string -> int64, TTL 7d
	RefEvents     = 2 // list of strings, int64 namespace
	RefClicks     = 3 // reducing int64, window namespace
	RefSessionEnd = 4 // timer service, void namespace

	RefUSD    = 0 // value int64, no TTL
	RefCharge = 1 // timer service, window namespace
)

const (
	hour = int64(time.Hour / time.Millisecond)
	day  = 24 * hour
)

func snap(k serializers.Kind, args ...serializers.Snapshot) serializers.Snapshot {
	return serializers.Snapshot{Kind: k, Args: args}
}

// Meta returns the savepoint's metadata, without its index.
func Meta(c Config) *savepoint.Metadata {
	session := ttl.New(24 * time.Hour)
	counts := ttl.Config{TTL: 7 * 24 * time.Hour, Update: ttl.OnReadAndWrite, Visibility: ttl.ReturnExpiredIfNotCleanedUp, SweepBudget: 10}
	void := snap(serializers.KindVoid)
	elems := make([][][]byte, c.Parallelism)
	for i := range elems {
		elems[i] = [][]byte{i64(int64(100 * i)), i64(int64(100*i + 1))}
	}
	return &savepoint.Metadata{
		ID: 9, CreatedAt: c.Now,
		Operators: []savepoint.Operator{
			{
				UID: "source", Name: "Source", Parallelism: c.Parallelism, MaxParallelism: c.MaxParallelism,
				OperatorStates: []savepoint.OperatorState{{Name: "offsets", Distribution: savepoint.EvenSplit, Element: snap(serializers.KindInt64), Subtasks: elems}},
			},
			{
				UID: "features", Name: "Features", Parallelism: c.Parallelism, MaxParallelism: c.MaxParallelism,
				KeyHash: keygroup.Murmur3, Key: snap(serializers.KindString),
				States: []savepoint.KeyedState{
					{Name: "session", Kind: savepoint.Value, Namespace: void, Value: snap(serializers.KindString), TTL: &session},
					{Name: "counts", Kind: savepoint.Map, Namespace: void, MapKey: snap(serializers.KindString), Value: snap(serializers.KindInt64), TTL: &counts},
					{Name: "events", Kind: savepoint.List, Namespace: snap(serializers.KindInt64), Value: snap(serializers.KindString)},
					{Name: "clicks", Kind: savepoint.Reducing, Namespace: snap(serializers.KindWindow), Value: snap(serializers.KindInt64)},
				},
				Timers: []savepoint.TimerService{{Name: "session-end", Namespace: void}},
				BroadcastStates: []savepoint.BroadcastState{{
					Name: "rules", Key: snap(serializers.KindString), Value: snap(serializers.KindString),
					Entries: []savepoint.BroadcastEntry{{Key: []byte("limit"), Value: []byte("100")}, {Key: []byte("region"), Value: []byte("eu")}},
				}},
			},
			{
				UID: "accounts", Name: "Accounts", Parallelism: c.Parallelism, MaxParallelism: c.MaxParallelism,
				KeyHash: keygroup.Murmur3, Key: snap(serializers.KindInt64),
				States:         []savepoint.KeyedState{{Name: "usd_total", Kind: savepoint.Value, Namespace: void, Value: snap(serializers.KindInt64)}},
				Timers:         []savepoint.TimerService{{Name: "charge", Namespace: snap(serializers.KindWindow)}},
				OperatorStates: []savepoint.OperatorState{{Name: "pending", Distribution: savepoint.Union, Element: snap(serializers.KindInt64), Subtasks: elems}},
			},
		},
	}
}

func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// rng is splitmix64: entries derive from (seed, key index) alone, so that
// a key's entries do not depend on which others exist.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// Write writes the savepoint to dir, which must not exist.
func Write(dir string, c Config) error {
	ctx := context.Background()
	meta := Meta(c)
	st, err := storage.Stage(dir, false)
	if err != nil {
		return err
	}
	w, err := snapshotfmt.NewWriter(st, meta, snapshotfmt.Options{Compression: c.Compression})
	if err != nil {
		st.Abort()
		return err
	}
	if err := writeData(ctx, w, c); err != nil {
		w.Abort()
		return err
	}
	return w.Finish(ctx)
}

func writeData(ctx context.Context, w *snapshotfmt.Writer, c Config) error {
	users := keysByGroup(c.Users, c.MaxParallelism, func(i int) []byte { return fmt.Appendf(nil, "user-%07d", i) })
	accounts := keysByGroup(c.Accounts, c.MaxParallelism, func(i int) []byte { return i64(int64(i) * 7919) })
	for _, op := range []struct {
		index int
		keys  [][]key
		gen   func(c Config, ref int, k key) []savepoint.Entry
		// refs counts states and timer services, timers from timersFrom on.
		refs, timersFrom int
	}{{OpFeatures, users, featureEntries, 5, RefSessionEnd}, {OpAccounts, accounts, accountEntries, 2, RefCharge}} {
		for s := range c.Parallelism {
			f, err := w.CreateDataFile(ctx, fmt.Sprintf("op%03d-%05d.data", op.index, s))
			if err != nil {
				return err
			}
			r := keygroup.ForSubtask(s, c.Parallelism, c.MaxParallelism)
			for kg := r.Start; kg <= r.End; kg++ {
				for ref := range op.refs {
					sref := savepoint.StateRef{Operator: op.index, State: ref}
					if ref >= op.timersFrom {
						sref = savepoint.StateRef{Operator: op.index, State: ref - op.timersFrom, Timer: true}
					}
					if err := writeSegment(f, sref, ref, kg, c, op.keys[kg], op.gen); err != nil {
						return err
					}
				}
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
	return nil
}

type key struct {
	index int
	bytes []byte
}

func keysByGroup(n, maxP int, mk func(int) []byte) [][]key {
	out := make([][]key, maxP)
	for i := range n {
		k := mk(i)
		kg := keygroup.Of(k, maxP)
		out[kg] = append(out[kg], key{i, k})
	}
	for _, ks := range out {
		slices.SortFunc(ks, func(a, b key) int { return bytes.Compare(a.bytes, b.bytes) })
	}
	return out
}

// writeSegment writes the segment of sref in key group kg; gen makes the
// entries of ref, its generator's number for the state.
func writeSegment(f *snapshotfmt.DataFileWriter, sref savepoint.StateRef, ref, kg int, c Config, keys []key, gen func(Config, int, key) []savepoint.Entry) error {
	var entries []savepoint.Entry
	for _, k := range keys {
		entries = append(entries, gen(c, ref, k)...)
	}
	if len(entries) == 0 {
		return nil
	}
	if sref.Timer {
		// Timers sort by time first; the keys' entries come by key.
		slices.SortStableFunc(entries, func(a, b savepoint.Entry) int {
			return cmp.Or(cmp.Compare(a.Timestamp, b.Timestamp), bytes.Compare(a.Key, b.Key), bytes.Compare(a.Namespace, b.Namespace))
		})
	}
	sw, err := f.Segment(sref, kg)
	if err != nil {
		return err
	}
	for i := range entries {
		if err := sw.Add(&entries[i]); err != nil {
			return err
		}
	}
	return sw.Close()
}

// featureEntries are one user's entries of one state, in the order the
// format wants within the key.
func featureEntries(c Config, ref int, k key) []savepoint.Entry {
	r := rng(c.Seed*1_000_003 + uint64(k.index)*31 + uint64(ref))
	var out []savepoint.Entry
	switch ref {
	case RefSession:
		if r.intn(3) == 0 {
			return nil
		}
		ts := c.Now - int64(r.intn(int(2*day)))
		v := append(i64(ts), fmt.Sprintf("s-%d-", k.index)...)
		v = append(v, bytes.Repeat([]byte{'x'}, c.Pad)...)
		out = append(out, savepoint.Entry{Key: k.bytes, Value: v})
	case RefCounts:
		for j := range r.intn(8) {
			ts := c.Now - int64(r.intn(int(14*day))) + hour
			out = append(out, savepoint.Entry{Key: k.bytes, MapKey: fmt.Appendf(nil, "cat-%02d", 3*j), Value: append(i64(ts), i64(int64(j))...)})
		}
	case RefEvents:
		for ns := range r.intn(3) {
			for j := range 1 + r.intn(4) {
				out = append(out, savepoint.Entry{Key: k.bytes, Namespace: i64(int64(ns)), Value: fmt.Appendf(nil, "ev-%d", 9-j)})
			}
		}
	case RefClicks:
		for w := range r.intn(3) {
			out = append(out, savepoint.Entry{Key: k.bytes, Namespace: append(i64(int64(w)*60_000), i64(int64(w+1)*60_000)...), Value: i64(int64(r.intn(100)))})
		}
	case RefSessionEnd:
		for range r.intn(3) {
			out = append(out, savepoint.Entry{Key: k.bytes, Timestamp: c.Now + int64(r.intn(int(hour)))})
		}
		slices.SortFunc(out, func(a, b savepoint.Entry) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
		out = slices.CompactFunc(out, func(a, b savepoint.Entry) bool { return a.Timestamp == b.Timestamp })
	}
	return out
}

func accountEntries(c Config, ref int, k key) []savepoint.Entry {
	r := rng(c.Seed*7_000_003 + uint64(k.index)*17 + uint64(ref))
	switch ref {
	case RefUSD:
		return []savepoint.Entry{{Key: k.bytes, Value: i64(int64(r.intn(1_000_000)))}}
	default:
		if r.intn(2) == 0 {
			return nil
		}
		at := c.Now + int64(r.intn(int(day)))
		return []savepoint.Entry{{Key: k.bytes, Namespace: append(i64(at-60_000), i64(at)...), Timestamp: at}}
	}
}
