package diff_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateproc/stateproc/diff"
	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/operatoredit"
	"github.com/stateproc/stateproc/prunettl"
	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/ttl"
)

const now = int64(1_767_225_600_000)

func gen(t *testing.T, c spgen.Config) string {
	t.Helper()
	if c.Now == 0 {
		c.Now = now
	}
	if c.Parallelism == 0 {
		c.Parallelism = 2
	}
	if c.MaxParallelism == 0 {
		c.MaxParallelism = 128
	}
	dir := filepath.Join(t.TempDir(), "sp")
	if err := spgen.Write(dir, c); err != nil {
		t.Fatal(err)
	}
	return dir
}

func open(t *testing.T, dir string) diff.Side {
	t.Helper()
	src, err := layouts.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return diff.Side{Source: src, Path: dir}
}

func compare(t *testing.T, a, b string, opts diff.Options) *diff.Report {
	t.Helper()
	rep, err := diff.Compare(context.Background(), open(t, a), open(t, b), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func state(t *testing.T, rep *diff.Report, uid, name string) *diff.StateDiff {
	t.Helper()
	for i := range rep.States {
		if s := &rep.States[i]; s.Operator == uid && s.Name == name {
			return s
		}
	}
	t.Fatalf("no state %s/%s in the diff", uid, name)
	return nil
}

// assertUnchanged checks that every key and entry of every state is
// unchanged, and that the diff read all of them.
func assertUnchanged(t *testing.T, rep *diff.Report) {
	t.Helper()
	if rep.Differ {
		t.Errorf("the savepoints differ")
	}
	var entries uint64
	for _, s := range rep.States {
		if s.A == nil || s.B == nil {
			t.Fatalf("%s/%s is on one side only", s.Operator, s.Name)
		}
		if s.Entries != (diff.Counts{Unchanged: s.A.Entries}) || s.A.Entries != s.B.Entries {
			t.Errorf("%s/%s: entries %+v, A %d, B %d", s.Operator, s.Name, s.Entries, s.A.Entries, s.B.Entries)
		}
		if s.Keys != nil && *s.Keys != (diff.Counts{Unchanged: s.A.Keys}) {
			t.Errorf("%s/%s: keys %+v, A has %d", s.Operator, s.Name, *s.Keys, s.A.Keys)
		}
		entries += s.A.Entries
	}
	for _, s := range rep.OperatorStates {
		if s.Entries != (diff.Counts{Unchanged: s.A.Entries}) || s.A.Entries == 0 {
			t.Errorf("%s/%s: %+v", s.Operator, s.Name, s.Entries)
		}
	}
	if entries == 0 {
		t.Fatal("no keyed entries compared")
	}
}

// A savepoint against itself: nothing differs, every key and entry of
// every state, timers, operator and broadcast state is unchanged.
func TestAgainstItself(t *testing.T) {
	sp := gen(t, spgen.Config{Seed: 1, Users: 300, Accounts: 50})
	rep := compare(t, sp, sp, diff.Options{})
	assertUnchanged(t, rep)
	if n := len(rep.States); n != 7 {
		t.Fatalf("%d states and timer services, want 7", n)
	}
	if s := state(t, rep, "features", "session-end"); s.Keys != nil || s.Kind != "timers" || s.Entries.Unchanged == 0 {
		t.Fatalf("timers: %+v", s)
	}
	if n := len(rep.OperatorStates); n != 3 {
		t.Fatalf("%d operator and broadcast states, want 3", n)
	}
}

// A rescaled copy holds the same keyed data in other key groups: the
// operators are re-bucketed to A's max parallelism, whichever way, and
// nothing differs.
func TestRescaledCopy(t *testing.T) {
	sp := gen(t, spgen.Config{Seed: 2, Users: 400, Accounts: 60})
	at720 := filepath.Join(t.TempDir(), "sp720")
	if _, err := rescale.Run(context.Background(), open(t, sp).Source, sp, rescale.Options{MaxParallelism: 720, Parallelism: 3}, rewrite.Options{Out: at720}); err != nil {
		t.Fatal(err)
	}
	for _, dirs := range [][2]string{{sp, at720}, {at720, sp}} {
		temp := t.TempDir()
		rep := compare(t, dirs[0], dirs[1], diff.Options{TempDir: temp})
		assertUnchanged(t, rep)
		for _, op := range rep.Operators {
			if want := op.UID != "source"; op.Rebucketed != want {
				t.Errorf("operator %s: rebucketed %v", op.UID, op.Rebucketed)
			}
		}
		if left, _ := os.ReadDir(temp); len(left) != 0 {
			t.Errorf("the re-bucketed copies are left in %s: %v", temp, left)
		}
	}
}

// expiredEntries counts, per state of the TTL states, the entries expired
// at at and the keys whose entries are all or partly expired, read from
// the savepoint directly.
func expiredEntries(t *testing.T, src savepoint.Source, uid, name string, at int64) (entries, allKeys, someKeys uint64) {
	t.Helper()
	op, _ := src.Metadata().Operator(uid)
	ks, _ := op.State(name)
	perKey := map[string][2]int{}
	for _, e := range sptest.Entries(t, src, uid, name) {
		c := perKey[string(e.Key)]
		c[1]++
		if ttl.Expired(int64(binary.BigEndian.Uint64(e.Value)), ks.TTL.Millis(), at) {
			c[0]++
			entries++
		}
		perKey[string(e.Key)] = c
	}
	for _, c := range perKey {
		switch {
		case c[0] == c[1]:
			allKeys++
		case c[0] > 0:
			someKeys++
		}
	}
	return entries, allKeys, someKeys
}

// A pruned copy lacks exactly the entries prune-ttl dropped: they are only
// in A, keys that lost all their entries are only in A, keys that lost
// some are changed, and nothing else differs.
func TestPrunedCopy(t *testing.T) {
	sp := gen(t, spgen.Config{Seed: 3, Users: 500, Accounts: 40})
	pruned := filepath.Join(t.TempDir(), "pruned")
	at := now + 3*24*3600_000
	prep, err := prunettl.Run(context.Background(), open(t, sp).Source, sp, prunettl.Options{Now: at}, rewrite.Options{Out: pruned})
	if err != nil {
		t.Fatal(err)
	}
	rep := compare(t, sp, pruned, diff.Options{})
	if !rep.Differ {
		t.Fatal("the pruned copy does not differ")
	}
	src := open(t, sp).Source
	for _, pr := range prep.States {
		s := state(t, rep, pr.Operator, pr.State)
		entries, allKeys, someKeys := expiredEntries(t, src, pr.Operator, pr.State, at)
		if pr.Dropped == 0 || entries != pr.Dropped {
			t.Fatalf("%s/%s: prune-ttl dropped %d, %d are expired", pr.Operator, pr.State, pr.Dropped, entries)
		}
		want := diff.Counts{OnlyA: pr.Dropped, Unchanged: pr.After}
		if s.Entries != want {
			t.Errorf("%s/%s: entries %+v, want %+v", pr.Operator, pr.State, s.Entries, want)
		}
		wantKeys := diff.Counts{OnlyA: allKeys, Changed: someKeys, Unchanged: s.A.Keys - allKeys - someKeys}
		if *s.Keys != wantKeys {
			t.Errorf("%s/%s: keys %+v, want %+v", pr.Operator, pr.State, *s.Keys, wantKeys)
		}
		t.Logf("%s/%s: %d entries dropped, %d keys gone, %d keys changed", pr.Operator, pr.State, entries, allKeys, someKeys)
	}
	for _, s := range rep.States {
		if s.Name != "session" && s.Name != "counts" && s.Entries.Differ() {
			t.Errorf("%s/%s differs: %+v", s.Operator, s.Name, s.Entries)
		}
	}
}

// spgen derives a key's entries from the seed and the key alone, so a
// savepoint of more users holds the fewer users' entries as they were: the
// extra users are only in B, with every entry of theirs, and the examples
// list the first of them in key-group order, decoded.
func TestMoreKeysOnlyInB(t *testing.T) {
	a, b := gen(t, spgen.Config{Seed: 4, Users: 200, Accounts: 30}), gen(t, spgen.Config{Seed: 4, Users: 260, Accounts: 30})
	rep := compare(t, a, b, diff.Options{Examples: 3})
	if !rep.Differ {
		t.Fatal("no difference")
	}
	srcA, srcB := open(t, a).Source, open(t, b).Source
	for _, name := range []string{"session", "counts", "events", "clicks"} {
		s := state(t, rep, "features", name)
		ka, kb := keySet(t, srcA, "features", name), keySet(t, srcB, "features", name)
		want := diff.Counts{OnlyB: uint64(len(kb) - len(ka)), Unchanged: uint64(len(ka))}
		if *s.Keys != want || s.Entries != (diff.Counts{OnlyB: s.B.Entries - s.A.Entries, Unchanged: s.A.Entries}) {
			t.Errorf("%s: keys %+v (want %+v), entries %+v", name, *s.Keys, want, s.Entries)
		}
		ex := s.Examples
		if len(ex.OnlyB) != 3 || len(ex.Unchanged) != 3 || len(ex.OnlyA) != 0 || len(ex.Changed) != 0 {
			t.Fatalf("%s: examples %d %d %d %d", name, len(ex.OnlyA), len(ex.OnlyB), len(ex.Changed), len(ex.Unchanged))
		}
		for _, e := range ex.OnlyB {
			k, ok := e.Key.(string)
			if !ok || kb[k] == 0 || ka[k] != 0 || len(e.B) == 0 || len(e.A) != 0 {
				t.Errorf("%s: example only in B: %+v", name, e)
			}
			if min(kb[k], diff.MaxExampleEntries) != len(e.B) || e.More != (kb[k] > diff.MaxExampleEntries) {
				t.Errorf("%s: key %s has %d entries, the example lists %d", name, k, kb[k], len(e.B))
			}
		}
	}
	// The first examples are those of the lowest key groups.
	s := state(t, rep, "features", "session")
	var firstKG []int
	for _, e := range s.Examples.OnlyB {
		firstKG = append(firstKG, keygroup.Of([]byte(e.Key.(string)), 128))
	}
	if !slices.IsSorted(firstKG) {
		t.Errorf("examples in key groups %v", firstKG)
	}
	v, _ := s.Examples.OnlyB[0].B[0].Get("value")
	if str, ok := v.(string); !ok || len(str) < 2 || str[:2] != "s-" {
		t.Errorf("a session example's value is %v", v)
	}
	if _, ok := s.Examples.OnlyB[0].B[0].Get("ttl_last_modified"); !ok {
		t.Error("a TTL state's example has no ttl_last_modified")
	}
}

// keySet counts the entries of every key of a state.
func keySet(t *testing.T, src savepoint.Source, uid, name string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range sptest.Entries(t, src, uid, name) {
		out[string(e.Key)]++
	}
	return out
}

// An operator removed from B has all its state only in A; renamed, it is
// one operator only in A and another only in B, counted from the index.
func TestOperatorOnOneSide(t *testing.T) {
	sp := gen(t, spgen.Config{Seed: 5, Users: 100, Accounts: 70})
	removed, renamed := filepath.Join(t.TempDir(), "removed"), filepath.Join(t.TempDir(), "renamed")
	src := open(t, sp).Source
	if _, err := operatoredit.Remove(context.Background(), src, sp, "accounts", rewrite.Options{Out: removed}); err != nil {
		t.Fatal(err)
	}
	if _, err := operatoredit.Rename(context.Background(), src, sp, "accounts", "ledger", rewrite.Options{Out: renamed}); err != nil {
		t.Fatal(err)
	}
	rep := compare(t, sp, removed, diff.Options{})
	usd := state(t, rep, "accounts", "usd_total")
	if usd.In != diff.OnlyA || usd.B != nil || *usd.Keys != (diff.Counts{OnlyA: 70}) || usd.Entries != (diff.Counts{OnlyA: 70}) {
		t.Fatalf("usd_total of a removed operator: %+v keys %+v", usd, *usd.Keys)
	}
	if !rep.Differ || rep.Operators[2].In != diff.OnlyA {
		t.Fatalf("operators %+v", rep.Operators)
	}
	rep = compare(t, sp, renamed, diff.Options{Operator: "ledger", Examples: 2})
	if len(rep.Operators) != 1 || rep.Operators[0].In != diff.OnlyB || len(rep.States) != 2 {
		t.Fatalf("--operator ledger: %+v", rep.Operators)
	}
	if s := state(t, rep, "ledger", "usd_total"); len(s.Examples.OnlyB) != 2 || s.Entries.OnlyB != 70 {
		t.Fatalf("ledger usd_total: %+v", s)
	}
	if s := state(t, rep, "ledger", "charge"); s.Entries.OnlyB == 0 || len(s.Examples.OnlyB) != 2 || len(s.Examples.OnlyB[0].B) != 1 {
		t.Fatalf("ledger charge: %+v", s)
	}
	if _, err := diff.Compare(context.Background(), open(t, sp), open(t, renamed), diff.Options{Operator: "nope"}); !errors.Is(err, diff.ErrNotFound) {
		t.Fatalf("an unknown operator: %v", err)
	}
	if _, err := diff.Compare(context.Background(), open(t, sp), open(t, renamed), diff.Options{State: "nope"}); !errors.Is(err, diff.ErrNotFound) {
		t.Fatalf("an unknown state: %v", err)
	}
}

// List elements match by position, map entries by map key, values by
// (key, namespace); a changed key lists the entries that differ on each
// side, and operator and broadcast state compare in the metadata.
func TestEntriesMatch(t *testing.T) {
	str := serializers.Snapshot{Kind: serializers.KindString}
	void := serializers.Snapshot{Kind: serializers.KindVoid}
	meta := func(broadcast []savepoint.BroadcastEntry, elems [][][]byte) *savepoint.Metadata {
		return &savepoint.Metadata{ID: 1, CreatedAt: now, Operators: []savepoint.Operator{{
			UID: "op", Name: "Op", Parallelism: len(elems), MaxParallelism: 128, KeyHash: 1, Key: str,
			States: []savepoint.KeyedState{
				{Name: "l", Kind: savepoint.List, Namespace: void, Value: str},
				{Name: "m", Kind: savepoint.Map, Namespace: void, MapKey: str, Value: str},
				{Name: "v", Kind: savepoint.Value, Namespace: void, Value: str},
			},
			OperatorStates:  []savepoint.OperatorState{{Name: "o", Distribution: savepoint.EvenSplit, Element: str, Subtasks: elems}},
			BroadcastStates: []savepoint.BroadcastState{{Name: "b", Key: str, Value: str, Entries: broadcast}},
		}}}
	}
	e := func(key, mk, v string) savepoint.Entry {
		out := savepoint.Entry{Key: []byte(key), Value: []byte(v)}
		if mk != "" {
			out.MapKey = []byte(mk)
		}
		return out
	}
	l, m, v := savepoint.StateRef{State: 0}, savepoint.StateRef{State: 1}, savepoint.StateRef{State: 2}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	err := sptest.Write(a, meta([]savepoint.BroadcastEntry{{Key: []byte("k1"), Value: []byte("x")}, {Key: []byte("k2"), Value: []byte("y")}},
		[][][]byte{{[]byte("p"), []byte("q")}, {[]byte("r")}}), map[savepoint.StateRef][]savepoint.Entry{
		l: {e("x", "", "1"), e("x", "", "2"), e("x", "", "3"), e("y", "", "1")},
		m: {e("x", "a", "1"), e("x", "b", "2"), e("z", "a", "1")},
		v: {e("x", "", "1"), e("y", "", "1")},
	}, snapshotfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = sptest.Write(b, meta([]savepoint.BroadcastEntry{{Key: []byte("k2"), Value: []byte("z")}, {Key: []byte("k3"), Value: []byte("w")}},
		[][][]byte{{[]byte("r"), []byte("p"), []byte("s")}}), map[savepoint.StateRef][]savepoint.Entry{
		l: {e("x", "", "1"), e("x", "", "3"), e("y", "", "1")},
		m: {e("x", "a", "1"), e("x", "c", "2"), e("z", "a", "9")},
		v: {e("x", "", "1"), e("w", "", "1")},
	}, snapshotfmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := compare(t, a, b, diff.Options{Examples: 5})
	for _, c := range []struct {
		name          string
		keys, entries diff.Counts
	}{
		// x: [1 2 3] -> [1 3]: index 0 same, 1 changed, 2 only in A.
		{"l", diff.Counts{Changed: 1, Unchanged: 1}, diff.Counts{OnlyA: 1, Changed: 1, Unchanged: 2}},
		// x: map key b only in A, c only in B; z: a changed.
		{"m", diff.Counts{Changed: 2}, diff.Counts{OnlyA: 1, OnlyB: 1, Changed: 1, Unchanged: 1}},
		{"v", diff.Counts{OnlyA: 1, OnlyB: 1, Unchanged: 1}, diff.Counts{OnlyA: 1, OnlyB: 1, Unchanged: 1}},
	} {
		s := state(t, rep, "op", c.name)
		if *s.Keys != c.keys || s.Entries != c.entries {
			t.Errorf("%s: keys %+v entries %+v, want %+v %+v", c.name, *s.Keys, s.Entries, c.keys, c.entries)
		}
	}
	x := state(t, rep, "op", "l").Examples.Changed[0]
	if x.Key != "x" || len(x.A) != 2 || len(x.B) != 1 {
		t.Fatalf("the changed list: %+v", x)
	}
	if i, _ := x.A[1].Get("index"); i != 2 {
		t.Errorf("the element only in A is at index %v", i)
	}
	if i, _ := x.B[0].Get("index"); i != 1 {
		t.Errorf("the changed element is at index %v in B", i)
	}
	for _, os := range rep.OperatorStates {
		var want diff.Counts
		switch os.Name {
		case "o":
			// p q r against r p s, in any subtask: q only in A, s only in B.
			want = diff.Counts{OnlyA: 1, OnlyB: 1, Unchanged: 2}
		case "b":
			want = diff.Counts{OnlyA: 1, OnlyB: 1, Changed: 1}
		}
		if os.Entries != want {
			t.Errorf("%s: %+v, want %+v", os.Name, os.Entries, want)
		}
	}
	bc := rep.OperatorStates[1].Examples.Changed[0]
	if bc.Key != "k2" || fmt.Sprint(bc.A[0]) != fmt.Sprint(diff.Entry{{Name: "value", Value: "y"}}) {
		t.Errorf("the changed broadcast entry: %+v", bc)
	}
}

// A damaged side fails the comparison as bad input, naming where.
func TestCorruptSide(t *testing.T) {
	sp := gen(t, spgen.Config{Seed: 6, Users: 200, Accounts: 10})
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.CopyFS(bad, os.DirFS(sp)); err != nil {
		t.Fatal(err)
	}
	src := open(t, sp).Source
	segs, err := savepoint.AllSegments(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	seg := segs[len(segs)/2]
	f, err := os.OpenFile(filepath.Join(bad, seg.File), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	off := seg.Offset + seg.Length/2
	f.ReadAt(b, off)
	b[0] ^= 0x40
	f.WriteAt(b, off)
	f.Close()
	_, err = diff.Compare(context.Background(), open(t, sp), open(t, bad), diff.Options{})
	var located *savepoint.Error
	if !errors.Is(err, savepoint.ErrCorrupt) || !errors.As(err, &located) || located.File != seg.File {
		t.Fatalf("a flipped byte in %s: %v", seg.File, err)
	}
}
