package inspect

import (
	"cmp"
	"context"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

// Options say how much Inspect reads.
type Options struct {
	// Now is the time TTL ages are taken at, in epoch milliseconds.
	Now int64
	// Scan reads every entry's framing (values are not decoded), checks
	// the figures against the data, and adds value sizes, TTL ages and the
	// most timers a key has.
	Scan bool
	// Top, when above 0, also lists the Top heaviest keys by entries and by
	// bytes; it implies Scan.
	Top int
	// Workers is how many segments are read at once; 0 means one per core.
	Workers int
	// Progress, when set, is told of the bytes of segments scanned so far
	// and in all; calls never overlap.
	Progress func(done, total int64)
}

// Report is what a savepoint holds, from its metadata and its segments'
// figures, with what a scan found when there was one. Its JSON form is the
// output of stateproc inspect -o json.
type Report struct {
	Savepoint      SavepointInfo       `json:"savepoint"`
	Now            jsonvalue.Instant   `json:"now"`
	Scanned        bool                `json:"scanned"`
	Operators      []OperatorInfo      `json:"operators"`
	States         []StateInfo         `json:"states"`
	Timers         []TimerInfo         `json:"timers"`
	OperatorStates []OperatorStateInfo `json:"operator_states"`
	TopKeys        *TopKeys            `json:"top_keys,omitempty"`
	// Warnings list the bytes that could not be walked: left as opaque,
	// the rest of their key groups unread.
	Warnings []WarningInfo `json:"warnings,omitempty"`
	// BytesRead is what was read of the savepoint's files, where the
	// caller counts it (a bucket-resident savepoint): without --scan, that
	// is _metadata alone.
	BytesRead *int64 `json:"bytes_read,omitempty"`
}

// WarningInfo is a savepoint.Warning: opaque bytes whose end only the
// job's classes know, after which the rest of a key group is not read.
type WarningInfo struct {
	File     string `json:"file"`
	KeyGroup *int   `json:"key_group,omitempty"`
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length"`
	// Compressed says Offset is in the key group's decompressed bytes.
	Compressed bool   `json:"compressed,omitempty"`
	Operator   string `json:"operator"`
	State      string `json:"state"`
	Class      string `json:"class,omitempty"`
	Serializer string `json:"serializer,omitempty"`
	Message    string `json:"message"`
}

// Warnings lists what src skipped so far, for a report.
func Warnings(src savepoint.Source) []WarningInfo {
	var out []WarningInfo
	for _, w := range savepoint.Warnings(src) {
		wi := WarningInfo{File: w.File, Offset: w.Offset, Length: w.Length, Compressed: w.Compressed,
			Operator: w.Operator, State: w.State, Class: w.Class, Serializer: w.Serializer, Message: w.Message}
		if w.KeyGroup >= 0 {
			kg := w.KeyGroup
			wi.KeyGroup = &kg
		}
		out = append(out, wi)
	}
	return out
}

// SavepointInfo says what the savepoint is.
type SavepointInfo struct {
	// Path is where it was read from; the caller sets it.
	Path string `json:"path"`
	// Layout is the layout and its version, as savepoint.Layout.String
	// writes it.
	Layout        string            `json:"layout"`
	FormatVersion uint32            `json:"format_version"`
	ID            uint64            `json:"id"`
	Created       jsonvalue.Instant `json:"created"`
	Lineage       []string          `json:"lineage,omitempty"`
	// Notes are what the layout's reader says of the savepoint as a whole.
	Notes []string `json:"notes,omitempty"`
}

// OperatorInfo is one operator.
type OperatorInfo struct {
	UID            string `json:"uid"`
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"max_parallelism"`
	KeyType        string `json:"key_type,omitempty"`
	// Bytes is everything the operator holds, uncompressed; StoredBytes what
	// its segments take where the layout stores them.
	Bytes       uint64 `json:"bytes"`
	StoredBytes uint64 `json:"stored_bytes"`
	// ID is the operator's ID where the layout keys operators by one of
	// its own (Apache Flink's, in hex).
	ID string `json:"id,omitempty"`
	// Unread lists what the operator holds that cannot be read, naming its
	// layout and size; Notes what else is not read.
	Unread []string `json:"unread,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// StateInfo is one keyed state.
type StateInfo struct {
	Operator      string   `json:"operator"`
	Name          string   `json:"name"`
	Kind          string   `json:"kind"`
	KeyType       string   `json:"key_type"`
	NamespaceType string   `json:"namespace_type"`
	MapKeyType    string   `json:"map_key_type,omitempty"`
	ValueType     string   `json:"value_type"`
	TTL           *TTLInfo `json:"ttl,omitempty"`
	// Keys counts distinct keys; Entries values, list elements or map
	// entries; Bytes the uncompressed bytes with their framing.
	Keys          uint64  `json:"keys"`
	Entries       uint64  `json:"entries"`
	Bytes         uint64  `json:"bytes"`
	BytesPerEntry float64 `json:"bytes_per_entry"`
	KeyGroups     int     `json:"key_groups"`
	// Skew is the largest key group's entries against the mean over all
	// key groups of the max parallelism.
	Skew float64 `json:"skew"`
	// ValueSize and Ages come from a scan.
	ValueSize *SizeInfo `json:"value_size,omitempty"`
	Ages      *Ages     `json:"ttl_ages,omitempty"`
	// IndexValueSize and IndexAges come from the histograms of the index,
	// without reading data, where the layout records them (stateproc's
	// format version 2 and later); NeedsScan says it does not, so that
	// value sizes and ages are known only from a scan.
	IndexValueSize *SizeRanges `json:"index_value_size,omitempty"`
	IndexAges      *AgeRanges  `json:"index_ttl_ages,omitempty"`
	NeedsScan      bool        `json:"needs_scan,omitempty"`
	// Notes say what of the values only the job's classes decode.
	Notes []string `json:"notes,omitempty"`
}

// TTLInfo is a state's TTL configuration, with the range of its entries'
// last-modified times from the figures.
type TTLInfo struct {
	TTL                 string `json:"ttl"`
	TTLMillis           int64  `json:"ttl_ms"`
	Update              string `json:"update"`
	Visibility          string `json:"visibility"`
	CleanupFullSnapshot bool   `json:"cleanup_full_snapshot"`
	CleanupIncremental  int    `json:"cleanup_incremental"`
	SweepBudget         int    `json:"sweep_budget"`
	// OldestModified and NewestModified bound the last-modified times;
	// absent when the state is empty.
	OldestModified *jsonvalue.Instant `json:"oldest_modified,omitempty"`
	NewestModified *jsonvalue.Instant `json:"newest_modified,omitempty"`
}

// SizeInfo is the distribution of value sizes: the value's own bytes,
// without framing and without the TTL timestamp.
type SizeInfo struct {
	P50 int `json:"p50"`
	P99 int `json:"p99"`
	Max int `json:"max"`
}

// Ages counts TTL entries by age at Now, in buckets that are fractions of
// the TTL.
type Ages struct {
	Buckets []AgeBucket `json:"buckets"`
	// Future counts entries last modified after Now.
	Future uint64 `json:"future"`
	// Expired counts the entries past their TTL at Now by the TTL rule.
	Expired uint64 `json:"expired"`
}

// AgeBucket is one range of ages, [From, To).
type AgeBucket struct {
	FromMillis int64 `json:"from_ms"`
	// ToMillis is absent for the last, open bucket.
	ToMillis *int64 `json:"to_ms,omitempty"`
	Entries  uint64 `json:"entries"`
}

// TimerInfo is one timer service.
type TimerInfo struct {
	Operator      string             `json:"operator"`
	Name          string             `json:"name"`
	NamespaceType string             `json:"namespace_type"`
	Timers        uint64             `json:"timers"`
	Bytes         uint64             `json:"bytes"`
	Earliest      *jsonvalue.Instant `json:"earliest,omitempty"`
	Latest        *jsonvalue.Instant `json:"latest,omitempty"`
	// MaxPerKey is the most timers one key has; scan only.
	MaxPerKey *uint64 `json:"max_per_key,omitempty"`
}

// OperatorStateInfo is one operator state, or one broadcast state, whose
// Distribution is "broadcast".
type OperatorStateInfo struct {
	Operator     string `json:"operator"`
	Name         string `json:"name"`
	Distribution string `json:"distribution"`
	Type         string `json:"type"`
	Entries      uint64 `json:"entries"`
	Bytes        uint64 `json:"bytes"`
}

// TopKeys are the heaviest keys of the keyed states.
type TopKeys struct {
	ByEntries []HotKey `json:"by_entries"`
	ByBytes   []HotKey `json:"by_bytes"`
}

// HotKey is one key of one keyed state with what it holds there.
type HotKey struct {
	Operator string `json:"operator"`
	State    string `json:"state"`
	// Key is the key decoded by the savepoint's key serializer, in the JSON
	// conventions of package jsonvalue, or its bytes in hex when it does
	// not decode.
	Key     any    `json:"key"`
	Entries uint64 `json:"entries"`
	// Bytes sums the map keys and values of the key's entries.
	Bytes uint64 `json:"bytes"`
}

// Inspect reports what src holds: from its metadata and the figures of its
// segments, and, with opts.Scan or opts.Top, from reading every entry on
// every core.
func Inspect(ctx context.Context, src savepoint.Source, opts Options) (*Report, error) {
	if w, ok := src.(segmentWalker); ok && (opts.Scan || opts.Top > 0) && src.Metadata().CheckRead(-1) == nil {
		segs, res, err := walkScan(ctx, src, w, opts)
		if err != nil {
			return nil, err
		}
		rep := index(src, segs, opts.Now)
		rep.addScan(src.Metadata(), res)
		rep.Warnings = Warnings(src)
		return rep, nil
	}
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return nil, err
	}
	rep := index(src, segs, opts.Now)
	if !opts.Scan && opts.Top <= 0 {
		rep.Warnings = Warnings(src)
		return rep, nil
	}
	if err := src.Metadata().CheckRead(-1); err != nil {
		return nil, err
	}
	ordered := fileOrder(segs)
	res, err := scan(ctx, src, ordered, opts.Now, opts.Top, opts.Workers, meter(ordered, opts.Progress))
	if err != nil {
		return nil, err
	}
	rep.addScan(src.Metadata(), res)
	rep.Warnings = Warnings(src)
	return rep, nil
}

// fileOrder sorts segments by where they lie, so that workers taking them
// in turn read each file front to back.
func fileOrder(segs []savepoint.Segment) []savepoint.Segment {
	out := slices.Clone(segs)
	slices.SortStableFunc(out, func(a, b savepoint.Segment) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset))
	})
	return out
}

// meter turns report, called with bytes done and in all, into a count of
// each segment's Length as it is done.
func meter(segs []savepoint.Segment, report func(done, total int64)) func(int64) {
	if report == nil {
		return nil
	}
	var total int64
	for _, s := range segs {
		total += s.Length
	}
	var mu sync.Mutex
	var done int64
	return func(n int64) {
		mu.Lock()
		defer mu.Unlock()
		done += n
		report(done, total)
	}
}

// index answers from the metadata and the segments' figures only.
func index(src savepoint.Source, segs []savepoint.Segment, now int64) *Report {
	m := src.Metadata()
	layout := src.Layout()
	rep := &Report{
		Savepoint: SavepointInfo{
			Layout: layout.String(), FormatVersion: layout.Version, ID: m.ID,
			Created: jsonvalue.Instant(m.CreatedAt), Lineage: m.Lineage, Notes: m.Notes,
		},
		Now:            jsonvalue.Instant(now),
		Operators:      []OperatorInfo{},
		States:         []StateInfo{},
		Timers:         []TimerInfo{},
		OperatorStates: []OperatorStateInfo{},
	}
	perRef := map[savepoint.StateRef][]savepoint.Stats{}
	opInfo := make([]OperatorInfo, len(m.Operators))
	for _, seg := range segs {
		perRef[seg.Ref] = append(perRef[seg.Ref], seg.Stats)
		opInfo[seg.Ref.Operator].Bytes += seg.Bytes
		opInfo[seg.Ref.Operator].StoredBytes += uint64(seg.Length)
	}
	for i := range m.Operators {
		op := &m.Operators[i]
		oi := &opInfo[i]
		oi.UID, oi.Name, oi.Parallelism, oi.MaxParallelism = op.UID, op.Name, op.Parallelism, op.MaxParallelism
		oi.ID, oi.Unread, oi.Notes = op.ID, op.Unread, op.Notes
		if op.Keyed() {
			oi.KeyType = op.Key.String()
		}
		for _, ref := range m.Refs(i) {
			if ref.Timer {
				rep.Timers = append(rep.Timers, timersFromIndex(op, ref.State, perRef[ref]))
			} else {
				rep.States = append(rep.States, stateFromIndex(op, ref.State, perRef[ref], now))
			}
		}
		for _, s := range op.OperatorStates {
			osi := OperatorStateInfo{Operator: op.UID, Name: s.Name, Distribution: s.Distribution.String(), Type: s.Element.String()}
			for _, sub := range s.Subtasks {
				for _, e := range sub {
					osi.Entries++
					osi.Bytes += uint64(len(e))
				}
			}
			oi.Bytes += osi.Bytes
			rep.OperatorStates = append(rep.OperatorStates, osi)
		}
		for _, b := range op.BroadcastStates {
			osi := OperatorStateInfo{Operator: op.UID, Name: b.Name, Distribution: "broadcast",
				Type: "map<" + b.Key.String() + "," + b.Value.String() + ">"}
			for _, e := range b.Entries {
				osi.Entries++
				osi.Bytes += uint64(len(e.Key) + len(e.Value))
			}
			oi.Bytes += osi.Bytes
			rep.OperatorStates = append(rep.OperatorStates, osi)
		}
		rep.Operators = append(rep.Operators, *oi)
	}
	return rep
}

func stateFromIndex(op *savepoint.Operator, i int, stats []savepoint.Stats, now int64) StateInfo {
	s := &op.States[i]
	si := StateInfo{
		Operator: op.UID, Name: s.Name, Kind: s.Kind.String(),
		KeyType: op.Key.String(), NamespaceType: namespaceType(s.Namespace), ValueType: s.Value.String(),
		KeyGroups: len(stats), Skew: skew(stats, op.MaxParallelism), Notes: s.Notes,
	}
	if s.Kind == savepoint.Map {
		si.MapKeyType = s.MapKey.String()
	}
	var oldest, newest int64
	for i, st := range stats {
		si.Keys += st.Keys
		si.Entries += st.Entries
		si.Bytes += st.Bytes
		if i == 0 || st.MinTimestamp < oldest {
			oldest = st.MinTimestamp
		}
		if i == 0 || st.MaxTimestamp > newest {
			newest = st.MaxTimestamp
		}
	}
	if si.Entries > 0 {
		si.BytesPerEntry = float64(si.Bytes) / float64(si.Entries)
	}
	var hists indexHists
	recorded := true
	for i := range stats {
		recorded = hists.add(&stats[i], s.TTL != nil) && recorded
	}
	switch {
	case !recorded:
		si.NeedsScan = true
	case len(stats) > 0:
		si.IndexValueSize = hists.sizeRanges()
		if s.TTL != nil {
			si.IndexAges = hists.ageRanges(s.TTL.Millis(), now)
		}
	}
	if c := s.TTL; c != nil {
		si.TTL = &TTLInfo{
			TTL: jsonvalue.Duration(c.Millis()), TTLMillis: c.Millis(), Update: c.Update.String(), Visibility: c.Visibility.String(),
			CleanupFullSnapshot: c.CleanupFullSnapshot, CleanupIncremental: c.CleanupIncremental, SweepBudget: c.SweepBudget,
		}
		if len(stats) > 0 {
			si.TTL.OldestModified, si.TTL.NewestModified = jsonvalue.Ptr(oldest), jsonvalue.Ptr(newest)
		}
	}
	return si
}

func timersFromIndex(op *savepoint.Operator, t int, stats []savepoint.Stats) TimerInfo {
	ti := TimerInfo{Operator: op.UID, Name: op.Timers[t].Name, NamespaceType: namespaceType(op.Timers[t].Namespace)}
	var earliest, latest int64
	for i, st := range stats {
		ti.Timers += st.Entries
		ti.Bytes += st.Bytes
		if i == 0 || st.MinTimestamp < earliest {
			earliest = st.MinTimestamp
		}
		if i == 0 || st.MaxTimestamp > latest {
			latest = st.MaxTimestamp
		}
	}
	if len(stats) > 0 {
		ti.Earliest, ti.Latest = jsonvalue.Ptr(earliest), jsonvalue.Ptr(latest)
	}
	return ti
}

// addScan adds what the scan found to the figures of the index.
func (rep *Report) addScan(m *savepoint.Metadata, sc *scanResult) {
	rep.Scanned = true
	si, ti := 0, 0
	for op := range m.Operators {
		for _, ref := range m.Refs(op) {
			st := sc.states[ref]
			if ref.Timer {
				n := st.maxTimersPerKey
				rep.Timers[ti].MaxPerKey = &n
				ti++
				continue
			}
			info := &rep.States[si]
			si++
			if st.sizes.n > 0 {
				info.ValueSize = &SizeInfo{P50: st.sizes.percentile(50), P99: st.sizes.percentile(99), Max: st.sizes.max}
			}
			if st.ages != nil {
				info.Ages = st.ages.report()
			}
		}
	}
	if sc.byEntries != nil {
		rep.TopKeys = &TopKeys{ByEntries: hotKeys(m, sc.byEntries), ByBytes: hotKeys(m, sc.byBytes)}
	}
}

func (h *ageHist) report() *Ages {
	set := &Ages{Future: h.future(), Expired: h.expiredCount()}
	for i, c := range h.counts() {
		from, to := h.bucket(i)
		b := AgeBucket{FromMillis: from, Entries: c}
		if to >= 0 {
			b.ToMillis = &to
		}
		set.Buckets = append(set.Buckets, b)
	}
	return set
}

// hotKeys decodes the keys kept for display; a key whose serializer cannot
// be restored or that does not decode is shown as hex.
func hotKeys(m *savepoint.Metadata, t *topKeys) []HotKey {
	out := []HotKey{}
	for _, k := range t.sorted() {
		op := &m.Operators[k.ref.Operator]
		out = append(out, HotKey{
			Operator: op.UID, State: m.RefName(k.ref),
			Key: DisplayKey(op, k.key), Entries: k.entries, Bytes: k.bytes,
		})
	}
	return out
}

// DisplayKey decodes key bytes of op for people, in the JSON conventions
// of package jsonvalue, falling back to hex when the key does not decode.
func DisplayKey(op *savepoint.Operator, key []byte) any {
	ser, err := serializers.Restore(op.Key)
	if err != nil {
		return hex.EncodeToString(key)
	}
	v, err := ser.DecodeAny(key)
	if err != nil {
		return hex.EncodeToString(key)
	}
	return jsonvalue.For(op.Key)(v)
}

// namespaceType names a namespace serializer; window state, stateproc's or
// Flink's, says so in words, as its entries are the contents (or timers)
// of time windows.
func namespaceType(ns serializers.Snapshot) string {
	if ns.NamespaceKind() == serializers.KindWindow {
		return "time window"
	}
	return ns.String()
}
