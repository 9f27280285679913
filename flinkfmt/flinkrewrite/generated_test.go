package flinkrewrite

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/internal/flinkgen"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/storage"
)

// sessions writes a small savepoint of the sessions-large shape.
func sessions(t testing.TB, users int, compressed bool) (string, flinkgen.Config) {
	t.Helper()
	c := flinkgen.SessionsLarge()
	c.Users, c.Compressed = users, compressed
	st := stage(t)
	if _, err := flinkgen.Write(context.Background(), st, c); err != nil {
		t.Fatal(err)
	}
	return st.publish(t), c
}

var countsRef = flinkgen.OperatorUID + "/" + flinkgen.CountsState

// Pruning drops exactly the map entries whose last access plus the TTL is
// at or before the time given, counted by the dry run as by the run, and
// keeps everything else as it was.
func TestPruneTTL(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		t.Run(fmt.Sprintf("compressed=%v", compressed), func(t *testing.T) {
			dir, c := sessions(t, 2000, compressed)
			now := c.Now + 2*24*time.Hour.Milliseconds()
			cutoff := now - flinkgen.CountsTTL.Milliseconds()
			in := readBack(t, dir)
			counts := flinkfmt.UIDHash(flinkgen.OperatorUID).String() + "/" + flinkgen.CountsState
			var want []string
			dropped := 0
			for _, e := range in.keyed[counts] {
				// The entry's text is key|ns|mapkey|value|..., the value's
				// first 8 bytes its last access.
				f := strings.Split(e, "|")
				v := mustHex(t, f[3])
				if int64(binary.BigEndian.Uint64(v)) <= cutoff {
					dropped++
					continue
				}
				want = append(want, e)
			}
			if dropped == 0 || len(want) == 0 {
				t.Fatalf("%d of %d entries expired: the test would not tell", dropped, len(in.keyed[counts]))
			}
			r := open(t, dir)
			opts := PruneOptions{Now: now, TTL: map[string]time.Duration{countsRef: flinkgen.CountsTTL}}
			dry, err := PruneTTL(context.Background(), r, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			st := stage(t)
			rep, err := PruneTTL(context.Background(), r, st, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, rp := range []*PruneReport{dry, rep} {
				if len(rp.States) != 1 || rp.States[0].Before != uint64(len(in.keyed[counts])) || rp.States[0].Dropped != uint64(dropped) ||
					rp.States[0].After != uint64(len(want)) || rp.States[0].TTLMillis != flinkgen.CountsTTL.Milliseconds() {
					t.Errorf("report %+v, want %d dropped of %d", rp.States, dropped, len(in.keyed[counts]))
				}
			}
			out := readBack(t, st.publish(t))
			if fmt.Sprint(out.keyed[counts]) != fmt.Sprint(want) {
				t.Fatalf("%d entries left, want %d", len(out.keyed[counts]), len(want))
			}
			out.keyed[counts], in.keyed[counts] = nil, nil
			if d := in.diff(out); d != "" {
				t.Fatal(d)
			}
			t.Logf("%d of %d entries of %s dropped at %d", dropped, dropped+len(want), flinkgen.CountsState, now)
		})
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	var b []byte
	if _, err := fmt.Sscanf(s, "%x", &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// A prune at a time when nothing is expired leaves every key group as it
// was, byte for byte.
func TestPruneNothingExpiredIsTheIdentity(t *testing.T) {
	dir, c := sessions(t, 1500, false)
	st := stage(t)
	rep, err := PruneTTL(context.Background(), open(t, dir), st, PruneOptions{Now: c.Now, TTL: map[string]time.Duration{countsRef: flinkgen.CountsTTL}})
	if err != nil || rep.States[0].Dropped != 0 || rep.States[0].Before == 0 {
		t.Fatalf("%+v, %v", rep, err)
	}
	out := st.publish(t)
	all := func(int) bool { return true }
	if n := sameKeyGroups(t, dir, out, flinkfmt.UIDHash(flinkgen.OperatorUID), all, all); n < 100 {
		t.Errorf("%d key groups compared", n)
	}
}

func TestPruneRefusals(t *testing.T) {
	dir, c := sessions(t, 100, false)
	r := open(t, dir)
	for _, cc := range []struct {
		ttl  map[string]time.Duration
		want string
	}{
		{nil, "category-counts"},
		{map[string]time.Duration{flinkgen.OperatorUID + "/" + flinkgen.SessionState: time.Hour}, "has no TTL"},
		{map[string]time.Duration{flinkgen.OperatorUID + "/no-such-state": time.Hour}, "no keyed state"},
		{map[string]time.Duration{"no-such-operator/category-counts": time.Hour}, "OPERATOR/STATE"},
		{map[string]time.Duration{countsRef: time.Microsecond}, "at least a millisecond"},
	} {
		st := stage(t)
		_, err := PruneTTL(context.Background(), r, st, PruneOptions{Now: c.Now, TTL: cc.ttl})
		if !errors.Is(err, rewrite.ErrRefused) || !strings.Contains(err.Error(), cc.want) {
			t.Errorf("%v: %v", cc.ttl, err)
		}
		if cc.ttl == nil && !errors.Is(err, errNoTTL) {
			t.Errorf("no TTL given: %v", err)
		}
		st.Abort()
	}
}

// The rescale through the spill files and the sort, in a budget that
// forces sorted runs and their merge, at the savepoint's own max
// parallelism gives what rewriting key group by key group gives: the input
// again, byte for byte; and there and back gives it too.
func TestRescaleSpillAndSortGeneratedSavepoint(t *testing.T) {
	dir, c := sessions(t, 20000, true)
	r := open(t, dir)
	id := flinkfmt.UIDHash(flinkgen.OperatorUID)
	all := func(int) bool { return true }
	st := stage(t)
	rep, err := Rescale(context.Background(), r, st, RescaleOptions{MaxParallelism: c.MaxParallelism, spillAlways: true, sortBudget: 64 << 10,
		Options: Options{InlineThreshold: -1}})
	if err != nil || rep.Operators[0].Action != Rebucketed {
		t.Fatalf("%+v, %v", rep, err)
	}
	out := st.publish(t)
	if n := sameKeyGroups(t, dir, out, id, all, all); n != c.MaxParallelism {
		t.Errorf("%d key groups compared", n)
	}
	st = stage(t)
	var done, total int64
	progress := func(d, tot int64) {
		if d < done || tot != total && total != 0 {
			t.Errorf("progress %d of %d after %d of %d", d, tot, done, total)
		}
		done, total = d, tot
	}
	if _, err := Rescale(context.Background(), r, st, RescaleOptions{MaxParallelism: 1000, Parallelism: 3, sortBudget: 64 << 10,
		Options: Options{Progress: progress}}); err != nil {
		t.Fatal(err)
	}
	if done > total || done < total*95/100 {
		t.Errorf("progress ended at %d of %d", done, total)
	}
	mid := st.publish(t)
	in, got := readBack(t, dir), readBack(t, mid)
	if d := in.diff(got); d != "" || got.hashed != got.entries {
		t.Fatalf("%s; %d of %d keys hashed", d, got.hashed, got.entries)
	}
	st = stage(t)
	if _, err := Rescale(context.Background(), open(t, mid), st, RescaleOptions{MaxParallelism: c.MaxParallelism, Parallelism: c.Parallelism, sortBudget: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	back := st.publish(t)
	if n := sameKeyGroups(t, dir, back, id, all, all); n != c.MaxParallelism {
		t.Errorf("%d key groups compared", n)
	}
	t.Logf("%d entries rescaled 128 → 1000 (parallelism 3) → 128 through sorted runs of a 128 KiB budget", got.entries)
}

// pojoSavepoint writes a savepoint keyed by a POJO, which Flink hashes with
// the class's own hashCode.
func pojoSavepoint(t *testing.T) string {
	t.Helper()
	long, err := flinkfmt.SimpleSnapshot(flinkfmt.LongSnapshotClass).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	optionalMap := func(entries ...[]byte) []byte {
		b := binary.BigEndian.AppendUint64(nil, 0x4F2C69A3D70)
		b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
		for _, e := range entries {
			b = append(b, e...)
		}
		return b
	}
	field := append(append([]byte{0, 2, 'i', 'd', 0, 1}, binary.BigEndian.AppendUint32(nil, uint32(len(long)))...), long...)
	body := append(append([]byte{0, 17}, "org.example.Order"...), optionalMap(field)...)
	body = append(append(body, optionalMap()...), optionalMap()...)
	pojo := flinkfmt.Snapshot{Class: "org.apache.flink.api.java.typeutils.runtime.PojoSerializerSnapshot", Version: 2, Body: body}
	void := flinkfmt.SimpleSnapshot(flinkfmt.VoidNamespaceClass)
	h, err := flinkfmt.NewCanonicalHeader(pojo, false, []flinkfmt.StateSpec{{Name: "total", Kind: flinkfmt.Value, Namespace: void, Value: flinkfmt.SimpleSnapshot(flinkfmt.LongSnapshotClass)}})
	if err != nil {
		t.Fatal(err)
	}
	// Order{id: 7}: no subclass, the field not null, the long; in the void
	// namespace.
	key := append([]byte{2, 0}, binary.BigEndian.AppendUint64(nil, 7)...)
	return writeSavepoint(t, h, []builtPair{{5, 0, append(key, 0), binary.BigEndian.AppendUint64(nil, 42)}})
}

// builtPair is a pair of a savepoint built for a test: its key group, state
// id, composite key without the prefix, and value.
type builtPair struct {
	kg, state  int
	key, value []byte
}

// writeSavepoint writes a savepoint of one operator ("orders", parallelism
// 1, max parallelism 128) whose keyed state is the given pairs, in order.
func writeSavepoint(t *testing.T, h *flinkfmt.CanonicalHeader, pairs []builtPair) string {
	t.Helper()
	st := stage(t)
	w := flinkfmt.NewStreamWriter(context.Background(), st, "keyed", -1)
	kgs := keygroup.All(128)
	cw, err := flinkfmt.NewCanonicalWriter(w, h, 128, kgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		if err := cw.Add(p.kg, p.state, p.key, p.value); err != nil {
			t.Fatal(err)
		}
	}
	offsets, err := cw.Finish()
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	m := &flinkfmt.Metadata{Version: 3, CheckpointID: 3, Operators: []*flinkfmt.Operator{{ID: flinkfmt.UIDHash("orders"), Parallelism: 1, MaxParallelism: 128,
		Subtasks: []flinkfmt.Subtask{{ManagedKeyed: &flinkfmt.KeyedHandle{Kind: flinkfmt.KeyedSavepointKeyGroups, KeyGroups: kgs, Offsets: offsets, Stream: s}}}}}}
	b, err := flinkfmt.EncodeMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	f, err := st.Create(context.Background(), flinkfmt.MetadataFile)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return st.publish(t)
}

// A rescale of a savepoint keyed by a POJO is refused before anything is
// written, naming the key class; so is one keyed by Kryo (a Scala job of
// the reference savepoints). At its own max parallelism no key moves, and
// the POJO-keyed savepoint is rewritten.
func TestRescaleRefusesKeysNotHashedByValue(t *testing.T) {
	dir := pojoSavepoint(t)
	var kryo string
	for _, d := range fixtures(t) {
		if strings.HasSuffix(d, "stateful-scala-udf-migration-itcase-flink1.20-rocksdb-savepoint") {
			kryo = d
		}
	}
	for _, c := range []struct {
		dir, class, why string
	}{
		{dir, "org.example.Order", "a POJO may override hashCode"},
		{kryo, "java.lang.Object", "Kryo"},
	} {
		parent := t.TempDir()
		target := filepath.Join(parent, "out")
		st, err := storage.Stage(target, false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Rescale(context.Background(), open(t, c.dir), st, RescaleOptions{MaxParallelism: 256})
		if !errors.Is(err, rewrite.ErrRefused) || !errors.Is(err, keyhash.ErrNotValueHashed) || !strings.Contains(err.Error(), c.class) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v", c.class, err)
		}
		// Nothing was written: the staging directory beside the target is
		// empty.
		tmps, _ := os.ReadDir(parent)
		for _, e := range tmps {
			files, _ := os.ReadDir(filepath.Join(parent, e.Name()))
			if len(files) > 0 {
				t.Errorf("%s: %d files written", c.class, len(files))
			}
		}
		st.Abort()
		t.Logf("refused: %v", err)
	}
	st := stage(t)
	rep, err := Rescale(context.Background(), open(t, dir), st, RescaleOptions{MaxParallelism: 128})
	if err != nil || rep.Operators[0].Action != Rewritten || rep.Operators[0].Entries != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	if got := readBack(t, st.publish(t)); got.entries != 1 || got.hashed != 0 {
		t.Errorf("%d entries, %d hashed", got.entries, got.hashed)
	}
}

func TestRescaleRefusals(t *testing.T) {
	dir, _ := sessions(t, 50, false)
	r := open(t, dir)
	for _, c := range []struct {
		opts RescaleOptions
		want string
	}{
		{RescaleOptions{MaxParallelism: 0}, "outside 1..32768"},
		{RescaleOptions{MaxParallelism: 40000}, "outside 1..32768"},
		{RescaleOptions{MaxParallelism: 64, Parallelism: 65}, "above --max-parallelism"},
		{RescaleOptions{MaxParallelism: 1}, "below its parallelism 2"},
		{RescaleOptions{MaxParallelism: 256, Operator: "nope"}, "neither an operator id"},
	} {
		if _, err := Rescale(context.Background(), r, nil, c.opts); !errors.Is(err, rewrite.ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.opts, err)
		}
	}
	rep, err := Rescale(context.Background(), r, nil, RescaleOptions{MaxParallelism: 256})
	if err != nil || !rep.DryRun || rep.Operators[0].Action != Rebucketed || rep.Operators[0].KeyedBytes == 0 || rep.Operators[0].Entries != 0 {
		t.Errorf("dry run: %+v, %v", rep, err)
	}
	if !bytes.Contains([]byte(fmt.Sprint(rep.Operators[0])), []byte("256")) {
		t.Errorf("%+v", rep.Operators[0])
	}
}

// Pruning a list state drops its expired elements one by one, and the list
// when none is left; a value state drops its expired values.
func TestPruneListAndValueStates(t *testing.T) {
	str := flinkfmt.SimpleSnapshot(flinkfmt.StringSnapshotClass)
	void := flinkfmt.SimpleSnapshot(flinkfmt.VoidNamespaceClass)
	ttlLong, err := flinkfmt.TTLSnapshot(flinkfmt.SimpleSnapshot(flinkfmt.LongSnapshotClass))
	if err != nil {
		t.Fatal(err)
	}
	list, err := flinkfmt.ListSnapshot(ttlLong)
	if err != nil {
		t.Fatal(err)
	}
	h, err := flinkfmt.NewCanonicalHeader(str, false, []flinkfmt.StateSpec{
		{Name: "events", Kind: flinkfmt.List, Namespace: void, Value: list},
		{Name: "last", Kind: flinkfmt.Value, Namespace: void, Value: ttlLong},
	})
	if err != nil {
		t.Fatal(err)
	}
	ttlValue := func(ts, v int64) []byte {
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(ts)), uint64(v))
	}
	join := func(elems ...[]byte) []byte { return bytes.Join(elems, []byte{','}) }
	var pairs []builtPair
	keys := map[int]string{}
	for _, k := range []string{"a", "b", "c"} {
		h, _ := keyhash.HashCode(k)
		keys[keyhash.KeyGroup(h, 128)] = k
	}
	kgs := []int{}
	for kg := range keys {
		kgs = append(kgs, kg)
	}
	slices.Sort(kgs)
	for _, kg := range kgs {
		key := append([]byte{2, keys[kg][0]}, 0)
		switch keys[kg] {
		case "a": // two elements of three expired
			pairs = append(pairs, builtPair{kg, 0, key, join(ttlValue(100, 1), ttlValue(900, 2), ttlValue(50, 3))})
			pairs = append(pairs, builtPair{kg, 1, key, ttlValue(900, 7)})
		case "b": // every element expired, and the value
			pairs = append(pairs, builtPair{kg, 0, key, join(ttlValue(10, 1), ttlValue(20, 2))})
			pairs = append(pairs, builtPair{kg, 1, key, ttlValue(20, 8)})
		case "c":
			pairs = append(pairs, builtPair{kg, 1, key, ttlValue(1000, 9)})
		}
	}
	dir := writeSavepoint(t, h, pairs)
	// TTL 500 at 600: last accesses at or before 100 are expired.
	st := stage(t)
	rep, err := PruneTTL(context.Background(), open(t, dir), st, PruneOptions{Now: 600,
		TTL: map[string]time.Duration{"orders/events": 500 * time.Millisecond, "orders/last": 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.States) != 2 || rep.States[0].Before != 5 || rep.States[0].Dropped != 4 || rep.States[1].Before != 3 || rep.States[1].Dropped != 1 {
		t.Fatalf("%+v", rep.States)
	}
	got := readBack(t, st.publish(t))
	id := flinkfmt.UIDHash("orders").String()
	events, last := got.keyed[id+"/events"], got.keyed[id+"/last"]
	want := []string{fmt.Sprintf("0261|00||%x|0|false", ttlValue(900, 2))}
	if fmt.Sprint(events) != fmt.Sprint(want) || len(last) != 2 {
		t.Errorf("events %v, want %v; last %v", events, want, last)
	}
}
