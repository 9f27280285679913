package sizing

import (
	"bytes"
	"encoding/binary"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/ttl"
)

// tally accumulates, over the segments of a state's sample, what an entry
// is made of, what the heap model says it costs, the ages of TTL entries
// and the timers per key.
type tally struct {
	kind  string
	ttl   *ttl.Config
	now   int64
	shape *heapShape

	bytes, keys, records, entries float64
	sum                           Breakdown
	heapRecord, heapEntry         float64
	age                           *AgeHistogram
	timers                        *TimerStats

	// The open record of a list or map state: its (key, namespace) and
	// its entries so far. Records never span segments.
	open       bool
	key, ns    []byte
	recEntries int
	// pairs holds the timers per (key, namespace) of one key group.
	pairs   map[string]pairTimers
	scratch []byte
}

// newTally starts the tally of a state, or of a timer service when timers
// is set.
func newTally(kind string, c *ttl.Config, now int64, shape *heapShape, timers *TimerStats) *tally {
	t := &tally{kind: kind, ttl: c, now: now, shape: shape, timers: timers}
	if c != nil {
		t.age = newAgeHistogram(c)
	}
	if timers != nil {
		t.pairs = map[string]pairTimers{}
	}
	return t
}

// segment streams the entries of seg from it, and checks them as the
// reader always does.
func (t *tally) segment(seg savepoint.Segment, it savepoint.EntryIterator) error {
	t.bytes += float64(seg.Bytes)
	t.keys += float64(seg.Keys)
	defer it.Close()
	for it.Next() {
		t.add(it.Entry())
	}
	t.closeRecord()
	if t.timers != nil {
		t.timers.addKeyGroup(t.pairs)
		clear(t.pairs)
	}
	return it.Err()
}

func (t *tally) add(e *savepoint.Entry) {
	t.entries++
	escaped := len(e.Key) + bytes.Count(e.Key, []byte{0})
	if t.kind == kindTimers {
		t.sum.Key += float64(len(e.Key))
		t.sum.Namespace += float64(len(e.Namespace))
		t.sum.Value += timeSize
		t.heapEntry += t.shape.entry(escaped, len(e.Namespace), nil, nil)
		t.scratch = binary.AppendUvarint(t.scratch[:0], uint64(len(e.Key)))
		t.scratch = append(append(t.scratch, e.Key...), e.Namespace...)
		p := t.pairs[string(t.scratch)]
		p.add(e.Timestamp)
		t.pairs[string(t.scratch)] = p
		t.timers.add(e.Timestamp)
		return
	}
	if !t.open || !bytes.Equal(e.Key, t.key) || !bytes.Equal(e.Namespace, t.ns) {
		t.closeRecord()
		t.open = true
		t.key = append(t.key[:0], e.Key...)
		t.ns = append(t.ns[:0], e.Namespace...)
		t.records++
		t.sum.Key += float64(len(e.Key))
		t.sum.Namespace += float64(len(e.Namespace))
		t.heapRecord += t.shape.record(escaped, len(e.Namespace))
	}
	t.recEntries++
	v := e.Value
	if t.ttl != nil && len(v) >= timeSize {
		t.age.add(int64(binary.BigEndian.Uint64(v)), t.now)
		t.sum.TTL += timeSize
		v = v[timeSize:]
	}
	t.sum.MapKey += float64(len(e.MapKey))
	t.sum.Value += float64(len(v))
	t.heapEntry += t.shape.entry(escaped, len(e.Namespace), e.MapKey, v)
}

// closeRecord adds the slice of the record that just ended.
func (t *tally) closeRecord() {
	if t.open {
		t.heapEntry += t.shape.collection(t.recEntries)
	}
	t.open, t.recEntries = false, 0
}

// finish writes the averages into st and scales the counts of the sample
// to the whole state, whose entries are total.
func (t *tally) finish(st *State, total float64) {
	st.Age, st.Timers = t.age, t.timers
	if t.entries == 0 {
		return
	}
	n := t.entries
	b := t.sum
	b.Framing = t.bytes - (b.Key + b.Namespace + b.MapKey + b.Value + b.TTL)
	b.Total = t.bytes
	st.PerEntry = Breakdown{Key: b.Key / n, Namespace: b.Namespace / n, MapKey: b.MapKey / n, Value: b.Value / n,
		TTL: b.TTL / n, Framing: b.Framing / n, Total: b.Total / n}
	st.HeapPerEntry = t.heapEntry / n
	if t.records > 0 {
		st.HeapPerRecord = t.heapRecord / t.records
		st.RecordsPerKey = t.records / t.keys
	}
	f := total / n
	if t.age != nil {
		t.age.scale(f)
		t.age.ExpiredBytes = t.age.Expired * st.PerEntry.Total
	}
	if t.timers != nil {
		t.timers.scale(f)
	}
}
