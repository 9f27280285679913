package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

type inspectOptions struct {
	output string
	scan   bool
	top    int
	now    string
	stderr io.Writer
}

func newInspectCmd() *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect SAVEPOINT",
		Short: "Show the operators, states, timers and sizes of a savepoint",
		Long: `Inspect shows what a savepoint holds: its operators; every keyed state
with its serializers, TTL, keys, entries, bytes and key-group skew; timers per
timer service; operator and broadcast state.

By default it answers from the savepoint's index alone and reads no data.
--scan reads every entry's framing (values are not decoded) on every core,
checks the index against the data (a mismatch is corruption, exit 4), and adds
value-size percentiles, the age of TTL entries at --now with the count already
past their TTL, and the most timers any key has. --top N also lists the N
heaviest keys by entries and by bytes; it implies --scan.

Keys counts distinct keys; entries counts values, list elements, map entries
or timers. Bytes are uncompressed, with framing. Skew is the largest key
group's entries against the mean over all key groups of the max parallelism.`,
		Example: `  stateproc inspect ./savepoints/sp-42
  stateproc inspect --scan --top 10 ./savepoints/sp-42
  stateproc inspect --scan --now 2026-11-29T06:00:00Z ./savepoints/sp-42
  stateproc inspect -o json ./savepoints/sp-42 | jq '.states[] | {name, entries}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runInspect(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	addOutputFlag(cmd, &o.output)
	cmd.Flags().BoolVar(&o.scan, "scan", false, "read every entry (on every core) for value sizes, TTL ages and timers per key")
	cmd.Flags().IntVar(&o.top, "top", 0, "list the `N` heaviest keys by entries and by bytes (implies --scan)")
	cmd.Flags().StringVar(&o.now, "now", "", "`time` for TTL ages, RFC 3339 or epoch ms (default: the savepoint's creation time)")
	return cmd
}

func runInspect(ctx context.Context, o inspectOptions, args []string, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.top < 0 {
		return usagef("--top must be 0 or more, not %d", o.top)
	}
	r, err := openSavepoint(ctx, args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	now := r.Metadata().CreatedAt
	if o.now != "" {
		if now, err = parseTime(o.now); err != nil {
			return err
		}
	}
	rep := indexReport(args[0], r, now)
	if o.scan || o.top > 0 {
		segs := allSegments(r)
		sc, err := scanSavepoint(ctx, r, segs, now, o.top, newProgress(o.stderr, segmentBytes(segs), "scanning"))
		if err != nil {
			return err
		}
		rep.addScan(r.Metadata(), sc)
	}
	if o.output == outputJSON {
		return writeJSON(out, rep)
	}
	return rep.writeTables(out)
}

// inspectReport is what inspect prints, as JSON or as tables.
type inspectReport struct {
	Savepoint      savepointInfo       `json:"savepoint"`
	Now            int64               `json:"now"`
	Scanned        bool                `json:"scanned"`
	Operators      []operatorInfo      `json:"operators"`
	States         []stateInfo         `json:"states"`
	Timers         []timerInfo         `json:"timers"`
	OperatorStates []operatorStateInfo `json:"operator_states"`
	TopKeys        *topKeysInfo        `json:"top_keys,omitempty"`
}

type savepointInfo struct {
	Path          string   `json:"path"`
	FormatVersion uint32   `json:"format_version"`
	ID            uint64   `json:"id"`
	CreatedAt     int64    `json:"created_at"`
	Created       string   `json:"created"`
	Lineage       []string `json:"lineage,omitempty"`
}

type operatorInfo struct {
	UID            string `json:"uid"`
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"max_parallelism"`
	KeyType        string `json:"key_type,omitempty"`
	// Bytes is everything the operator holds, uncompressed; StoredBytes what
	// its segments take in the data files.
	Bytes       uint64 `json:"bytes"`
	StoredBytes uint64 `json:"stored_bytes"`
}

type stateInfo struct {
	Operator      string     `json:"operator"`
	Name          string     `json:"name"`
	Kind          string     `json:"kind"`
	KeyType       string     `json:"key_type"`
	NamespaceType string     `json:"namespace_type"`
	MapKeyType    string     `json:"map_key_type,omitempty"`
	ValueType     string     `json:"value_type"`
	TTL           *ttlInfo   `json:"ttl,omitempty"`
	Keys          uint64     `json:"keys"`
	Entries       uint64     `json:"entries"`
	Bytes         uint64     `json:"bytes"`
	BytesPerEntry float64    `json:"bytes_per_entry"`
	KeyGroups     int        `json:"key_groups"`
	Skew          float64    `json:"skew"`
	ValueSize     *sizeInfo  `json:"value_size,omitempty"`
	Ages          *ttlAgeSet `json:"ttl_ages,omitempty"`
}

type ttlInfo struct {
	TTL                 string `json:"ttl"`
	TTLMillis           int64  `json:"ttl_ms"`
	Update              string `json:"update"`
	Visibility          string `json:"visibility"`
	CleanupFullSnapshot bool   `json:"cleanup_full_snapshot"`
	CleanupIncremental  int    `json:"cleanup_incremental"`
	SweepBudget         int    `json:"sweep_budget"`
	// OldestModified and NewestModified bound the last-modified times, from
	// the index; absent when the state is empty.
	OldestModified *int64 `json:"oldest_modified,omitempty"`
	NewestModified *int64 `json:"newest_modified,omitempty"`
}

// sizeInfo is the distribution of value sizes: the value's own bytes,
// without framing and without the TTL timestamp.
type sizeInfo struct {
	P50 int `json:"p50"`
	P99 int `json:"p99"`
	Max int `json:"max"`
}

type ttlAgeSet struct {
	Buckets []ageBucket `json:"buckets"`
	// Future counts entries last modified after --now.
	Future uint64 `json:"future"`
	// Expired counts the entries past their TTL at --now by the TTL rule.
	Expired uint64 `json:"expired"`
}

type ageBucket struct {
	FromMillis int64 `json:"from_ms"`
	// ToMillis is absent for the last, open bucket.
	ToMillis *int64 `json:"to_ms,omitempty"`
	Entries  uint64 `json:"entries"`
}

type timerInfo struct {
	Operator      string `json:"operator"`
	Name          string `json:"name"`
	NamespaceType string `json:"namespace_type"`
	Timers        uint64 `json:"timers"`
	Bytes         uint64 `json:"bytes"`
	Earliest      *int64 `json:"earliest,omitempty"`
	Latest        *int64 `json:"latest,omitempty"`
	// MaxPerKey is the most timers one key has; scan only.
	MaxPerKey *uint64 `json:"max_per_key,omitempty"`
}

type operatorStateInfo struct {
	Operator     string `json:"operator"`
	Name         string `json:"name"`
	Distribution string `json:"distribution"`
	Type         string `json:"type"`
	Entries      uint64 `json:"entries"`
	Bytes        uint64 `json:"bytes"`
}

type topKeysInfo struct {
	ByEntries []hotKeyInfo `json:"by_entries"`
	ByBytes   []hotKeyInfo `json:"by_bytes"`
}

type hotKeyInfo struct {
	Operator string `json:"operator"`
	State    string `json:"state"`
	Key      any    `json:"key"`
	Entries  uint64 `json:"entries"`
	Bytes    uint64 `json:"bytes"`
}

// indexReport answers from the metadata and index only.
func indexReport(path string, r *snapshotfmt.Reader, now int64) *inspectReport {
	m := r.Metadata()
	rep := &inspectReport{
		Savepoint: savepointInfo{
			Path: path, FormatVersion: m.FormatVersion, ID: m.ID,
			CreatedAt: m.CreatedAt, Created: formatTime(m.CreatedAt), Lineage: m.Lineage,
		},
		Now:            now,
		Operators:      []operatorInfo{},
		States:         []stateInfo{},
		Timers:         []timerInfo{},
		OperatorStates: []operatorStateInfo{},
	}
	for i := range m.Operators {
		op := &m.Operators[i]
		oi := operatorInfo{UID: op.UID, Name: op.Name, Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism}
		if op.Keyed() {
			oi.KeyType = op.Key.String()
		}
		perRef := make([][]savepoint.Stats, len(op.States)+len(op.Timers))
		for _, seg := range r.Segments(i) {
			perRef[seg.Ref] = append(perRef[seg.Ref], seg.Stats)
			oi.Bytes += seg.Bytes
			oi.StoredBytes += uint64(seg.Length)
		}
		for ref := range op.States {
			rep.States = append(rep.States, stateFromIndex(op, ref, perRef[ref]))
		}
		for t := range op.Timers {
			rep.Timers = append(rep.Timers, timersFromIndex(op, t, perRef[len(op.States)+t]))
		}
		for _, s := range op.OperatorStates {
			osi := operatorStateInfo{Operator: op.UID, Name: s.Name, Distribution: s.Distribution.String(), Type: s.Element.String()}
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
			osi := operatorStateInfo{Operator: op.UID, Name: b.Name, Distribution: "broadcast",
				Type: "map<" + b.Key.String() + "," + b.Value.String() + ">"}
			for _, e := range b.Entries {
				osi.Entries++
				osi.Bytes += uint64(len(e.Key) + len(e.Value))
			}
			oi.Bytes += osi.Bytes
			rep.OperatorStates = append(rep.OperatorStates, osi)
		}
		rep.Operators = append(rep.Operators, oi)
	}
	return rep
}

func stateFromIndex(op *savepoint.Operator, ref int, stats []savepoint.Stats) stateInfo {
	s := &op.States[ref]
	si := stateInfo{
		Operator: op.UID, Name: s.Name, Kind: s.Kind.String(),
		KeyType: op.Key.String(), NamespaceType: s.Namespace.String(), ValueType: s.Value.String(),
		KeyGroups: len(stats), Skew: skew(stats, op.MaxParallelism),
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
	if c := s.TTL; c != nil {
		si.TTL = &ttlInfo{
			TTL: formatMillis(c.Millis()), TTLMillis: c.Millis(), Update: c.Update.String(), Visibility: c.Visibility.String(),
			CleanupFullSnapshot: c.CleanupFullSnapshot, CleanupIncremental: c.CleanupIncremental, SweepBudget: c.SweepBudget,
		}
		if len(stats) > 0 {
			si.TTL.OldestModified, si.TTL.NewestModified = &oldest, &newest
		}
	}
	return si
}

func timersFromIndex(op *savepoint.Operator, t int, stats []savepoint.Stats) timerInfo {
	ti := timerInfo{Operator: op.UID, Name: op.Timers[t].Name, NamespaceType: op.Timers[t].Namespace.String()}
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
		ti.Earliest, ti.Latest = &earliest, &latest
	}
	return ti
}

// addScan adds what the scan found to the figures of the index.
func (rep *inspectReport) addScan(m *savepoint.Metadata, sc *scanResult) {
	rep.Scanned = true
	si, ti := 0, 0
	for op := range m.Operators {
		o := &m.Operators[op]
		for ref := range o.States {
			st := &sc.states[op][ref]
			info := &rep.States[si]
			si++
			if st.sizes.n > 0 {
				info.ValueSize = &sizeInfo{P50: st.sizes.percentile(50), P99: st.sizes.percentile(99), Max: st.sizes.max}
			}
			if st.ages != nil {
				info.Ages = st.ages.report()
			}
		}
		for t := range o.Timers {
			n := sc.states[op][len(o.States)+t].maxTimersPerKey
			rep.Timers[ti].MaxPerKey = &n
			ti++
		}
	}
	if sc.byEntries != nil {
		rep.TopKeys = &topKeysInfo{ByEntries: hotKeyInfos(m, sc.byEntries), ByBytes: hotKeyInfos(m, sc.byBytes)}
	}
}

func (h *ageHist) report() *ttlAgeSet {
	set := &ttlAgeSet{Future: h.future(), Expired: h.expiredCount()}
	for i, c := range h.counts() {
		from, to := h.bucket(i)
		b := ageBucket{FromMillis: from, Entries: c}
		if to >= 0 {
			b.ToMillis = &to
		}
		set.Buckets = append(set.Buckets, b)
	}
	return set
}

// hotKeyInfos decodes the keys kept for display; a key whose serializer
// cannot be restored or that does not decode is shown as hex.
func hotKeyInfos(m *savepoint.Metadata, t *topKeys) []hotKeyInfo {
	out := []hotKeyInfo{}
	for _, k := range t.sorted() {
		op := &m.Operators[k.op]
		out = append(out, hotKeyInfo{
			Operator: op.UID, State: op.States[k.ref].Name,
			Key: displayKey(op, k.key), Entries: k.entries, Bytes: k.bytes,
		})
	}
	return out
}
