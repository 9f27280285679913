package statetest

import (
	"bytes"
	"cmp"
	"fmt"
	"testing"

	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

func userKey(i int) []byte { return stringKey(fmt.Sprintf("user-%05d", i)) }

// testSnapshotLayout checks what a backend hands the writer against the
// format's rules, so that a violation points at the backend rather than at
// the reader: one segment per non-empty key group, keys of that key group,
// the order of records, list elements and map entries, TTL prefixes and the
// index counts.
func testSnapshotLayout(t *testing.T, newBackend Factory) {
	f := newFixture(t, newBackend)
	j := newJob()
	s := j.open(f)
	const keys = 300
	index := make(map[string]int)
	for i := range keys {
		s.write(i, userKey(i), false)
		index[string(userKey(i))] = i
	}
	now := t0 + 1000
	r := WriteSavepoint(t, tempDir(t, "savepoint"), NewMetadata(j.operator(1, maxP, serializers.String()), now), now, f.b)
	for ref, sref := range r.Metadata().Refs(0) {
		st := r.Metadata().KeyedState(sref)
		keysInRef := 0
		for _, seg := range sptest.Segments(t, r, nth(r, 0, ref)) {
			entries := sptest.SegmentEntries(t, r, seg)
			where := fmt.Sprintf("ref %d key group %d", ref, seg.KeyGroup)
			if len(entries) == 0 {
				t.Fatalf("%s: a segment without entries", where)
			}
			checkSegment(t, where, st, seg, entries)
			keysInRef += int(seg.Keys)
		}
		if st != nil {
			eq(t, fmt.Sprintf("distinct keys of state %q", st.Name), keysInRef, wantKeys(st.Name, keys))
		}
	}

	// The contents, decoded: values with their TTL time, lists in order.
	for _, e := range sptest.EntriesOf(t, r, nth(r, 0, 0)) {
		i := index[string(e.Key)]
		eq(t, "last-modified time of a count", lastModified(t, e.Value), writeTime(i))
		v, err := serializers.Int64().Decode(e.Value[8:])
		must(t, err)
		eq(t, "count", v, int64(3*i))
	}
	lists := make(map[int][]string)
	for _, e := range sptest.EntriesOf(t, r, nth(r, 0, 1)) {
		v, err := serializers.String().Decode(e.Value)
		must(t, err)
		i := index[string(e.Key)]
		lists[i] = append(lists[i], v)
	}
	for i := range keys {
		eq(t, fmt.Sprintf("events of key %d", i), lists[i], jobEvents(i))
	}
	timers := sptest.EntriesOf(t, r, savepoint.StateRef{Operator: 0, Timer: true})
	var want int
	for i := range keys {
		want += len(jobTimersOf(t, i, userKey(i)))
	}
	eq(t, "timers", len(timers), want)
}

// wantKeys is how many of the first n keys hold state name.
func wantKeys(name string, n int) int {
	if name != "events" {
		return n
	}
	with := 0
	for i := range n {
		if len(jobEvents(i)) > 0 {
			with++
		}
	}
	return with
}

// checkSegment checks one segment of state st (nil for a timer service).
func checkSegment(t testing.TB, where string, st *savepoint.KeyedState, seg savepoint.Segment, entries []savepoint.Entry) {
	t.Helper()
	eq(t, where+": entries in the index", seg.Entries, uint64(len(entries)))
	timestamp := func(e savepoint.Entry) int64 {
		if st != nil && st.TTL != nil {
			return lastModified(t, e.Value)
		}
		return e.Timestamp
	}
	distinct := 0
	minTS, maxTS := timestamp(entries[0]), timestamp(entries[0])
	for i, e := range entries {
		if kg := keygroup.Of(e.Key, maxP); kg != seg.KeyGroup {
			t.Fatalf("%s: entry %d has a key of key group %d", where, i, kg)
		}
		minTS, maxTS = min(minTS, timestamp(e)), max(maxTS, timestamp(e))
		if i == 0 {
			distinct++
			continue
		}
		if !bytes.Equal(e.Key, entries[i-1].Key) {
			distinct++
		}
		p := entries[i-1]
		var c int
		switch {
		case st == nil:
			c = cmp.Or(cmp.Compare(p.Timestamp, e.Timestamp), bytes.Compare(p.Key, e.Key), bytes.Compare(p.Namespace, e.Namespace))
		case st.Kind == savepoint.Map:
			c = cmp.Or(bytes.Compare(p.Key, e.Key), bytes.Compare(p.Namespace, e.Namespace), bytes.Compare(p.MapKey, e.MapKey))
		case st.Kind == savepoint.List:
			// Elements of one list repeat its (key, namespace).
			if c = cmp.Or(bytes.Compare(p.Key, e.Key), bytes.Compare(p.Namespace, e.Namespace)); c == 0 {
				c = -1
			}
		default:
			c = cmp.Or(bytes.Compare(p.Key, e.Key), bytes.Compare(p.Namespace, e.Namespace))
		}
		if c >= 0 {
			t.Fatalf("%s: entry %d is not after entry %d:\n%+v\n%+v", where, i, i-1, e, p)
		}
	}
	if st == nil {
		eq(t, where+": keys of a timer service in the index", seg.Keys, uint64(0))
	} else {
		eq(t, where+": distinct keys in the index", seg.Keys, uint64(distinct))
	}
	if st == nil || st.TTL != nil {
		eq(t, where+": timestamp range in the index", [2]int64{seg.MinTimestamp, seg.MaxTimestamp}, [2]int64{minTS, maxTS})
	}
}

// testSnapshotDeterministic checks that a snapshot depends on the state
// only: the same backend snapshotted twice, and another one that reached the
// same state by writes in another order and by writing then clearing an
// extra key, give byte-identical savepoints.
func testSnapshotDeterministic(t *testing.T, newBackend Factory) {
	j := newJob()
	const keys = 400
	a := newFixture(t, newBackend)
	sa := j.open(a)
	for i := range keys {
		sa.write(i, userKey(i), false)
	}
	b := newFixture(t, newBackend)
	sb := j.open(b)
	sb.write(keys, userKey(keys), false)
	for i := keys - 1; i >= 0; i-- {
		sb.write(i, userKey(i), true)
	}
	sb.clear(keys, userKey(keys))

	now := t0 + 1000
	meta := NewMetadata(j.operator(1, maxP, serializers.String()), now)
	first, second, other := tempDir(t, "first"), tempDir(t, "second"), tempDir(t, "other")
	WriteSavepoint(t, first, meta, now, a.b)
	WriteSavepoint(t, second, meta, now, a.b)
	WriteSavepoint(t, other, meta, now, b.b)
	sptest.SameFiles(t, first, second)
	sptest.SameFiles(t, first, other)
}
