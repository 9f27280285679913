package export

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
)

// Dataset kinds besides the keyed state kinds (value, list, map, reducing,
// aggregating).
const (
	KindTimers    = "timers"
	KindOperator  = "operator"
	KindBroadcast = "broadcast"
)

// dataset is one directory of files: a keyed state, a timer service, an
// operator state or a broadcast state of one operator.
type dataset struct {
	opIdx int
	op    *savepoint.Operator
	name  string
	kind  string
	dir   string
	// ref is the keyed state or timer service.
	ref       savepoint.StateRef
	state     *savepoint.KeyedState
	timers    *savepoint.TimerService
	opState   *savepoint.OperatorState
	broadcast *savepoint.BroadcastState
	layout    *layout
	// metadata is what every file of the dataset records about where its
	// rows come from.
	metadata arrow.Metadata
	// index lists the segments read, for keyed states and timers.
	index []savepoint.Segment
	rows  int64
	// files is the number of files, and bytes their size once written.
	files int64
	bytes atomic.Int64
}

// part is one file: rows [start, start + rows) of its dataset, in the
// order the savepoint stores them. For keyed states and timers the first
// row is entry skip of index[first].
type part struct {
	ds    *dataset
	seq   int
	first int
	skip  uint64
	start int64
	rows  int64
}

// run is the parts [seq, seq + parts) of a dataset, which one worker
// writes in order, each file of a keyed dataset reading on from where the
// one before stopped. A run starts at the first part that starts within
// an index entry (or, for operator and broadcast state, at every part),
// skipping the entries of that index entry that the run before holds, so
// runs are no more than index entries: the parts, which the index's counts
// decide, are cut as the run is written. Where index entries hold fewer
// rows than a file, as they do but in a few key groups of many entries,
// every file starts a run, and the cores share the files of one state.
type run struct {
	part
	parts   int64
	maxRows int64
	allRows int64 // of the run
}

func (p *part) name(f Format) string {
	return path.Join(p.ds.dir, fmt.Sprintf("part-%05d.%s", p.seq, f.extension()))
}

// selectDatasets lists the datasets that o asks for, each with its layout
// compiled, in the order of the metadata. A state whose types have no Arrow
// mapping fails the whole export here, before anything is written.
func selectDatasets(src savepoint.Source, o *Options) ([]*dataset, error) {
	m := src.Metadata()
	var out []*dataset
	foundOp, foundState := o.Operator == "", o.State == ""
	for opIdx := range m.Operators {
		op := &m.Operators[opIdx]
		if o.Operator != "" && op.UID != o.Operator {
			continue
		}
		foundOp = true
		if err := m.CheckRead(opIdx); err != nil {
			return nil, err
		}
		var all []*dataset
		for i := range op.States {
			st := &op.States[i]
			all = append(all, &dataset{opIdx: opIdx, op: op, name: st.Name, kind: st.Kind.String(), ref: savepoint.StateRef{Operator: opIdx, State: i}, state: st})
		}
		for i := range op.Timers {
			t := &op.Timers[i]
			all = append(all, &dataset{opIdx: opIdx, op: op, name: t.Name, kind: KindTimers, ref: savepoint.StateRef{Operator: opIdx, State: i, Timer: true}, timers: t})
		}
		// Operator and broadcast state belong to no key group.
		if o.KeyGroups == nil || o.WithNonKeyed {
			for i := range op.OperatorStates {
				s := &op.OperatorStates[i]
				all = append(all, &dataset{opIdx: opIdx, op: op, name: s.Name, kind: KindOperator, opState: s})
			}
			for i := range op.BroadcastStates {
				s := &op.BroadcastStates[i]
				all = append(all, &dataset{opIdx: opIdx, op: op, name: s.Name, kind: KindBroadcast, broadcast: s})
			}
		}
		dirs := map[string]*dataset{}
		for _, ds := range all {
			if o.State != "" && ds.name != o.State {
				continue
			}
			foundState = true
			ds.dir = escapeName(op.UID) + "/" + escapeName(ds.name)
			if other, ok := dirs[ds.dir]; ok {
				return nil, fmt.Errorf("export: operator %q has a %s and a %s both named %q, whose datasets would share a directory", op.UID, other.what(), ds.what(), ds.name)
			}
			dirs[ds.dir] = ds
			if err := ds.compile(m.ID, o.Now); err != nil {
				return nil, fmt.Errorf("export: operator %q %s %q: %w", op.UID, ds.what(), ds.name, err)
			}
			out = append(out, ds)
		}
	}
	switch {
	case !foundOp:
		return nil, fmt.Errorf("export: no operator %q in the savepoint", o.Operator)
	case !foundState:
		return nil, fmt.Errorf("export: no state %q to export in operator %q", o.State, o.Operator)
	}
	return out, nil
}

// what says what the dataset is, for messages.
func (ds *dataset) what() string {
	switch {
	case ds.timers != nil:
		return "timer service"
	case ds.opState != nil:
		return "operator state"
	case ds.broadcast != nil:
		return "broadcast state"
	}
	return "state"
}

// compile maps the dataset's serializers to its columns and writes down
// its metadata.
func (ds *dataset) compile(id uint64, now *int64) error {
	var err error
	switch {
	case ds.state != nil:
		ds.layout, err = keyedLayout(ds.op, ds.state, nil, now)
	case ds.timers != nil:
		ds.layout, err = keyedLayout(ds.op, nil, ds.timers, now)
	case ds.opState != nil:
		ds.layout, err = operatorStateLayout(ds.opState)
	default:
		ds.layout, err = broadcastLayout(ds.broadcast)
	}
	if err != nil {
		return err
	}
	return ds.describe(id, now)
}

// describe sets the metadata of the dataset's files: Parquet key-value
// metadata, Arrow schema metadata.
func (ds *dataset) describe(id uint64, now *int64) error {
	snaps := map[string]any{}
	switch {
	case ds.state != nil:
		snaps["key"], snaps["namespace"], snaps["value"] = ds.op.Key, ds.state.Namespace, ds.state.Value
		if ds.state.Kind == savepoint.Map {
			snaps["mapKey"] = ds.state.MapKey
		}
		if ds.state.TTL != nil {
			snaps["ttlMillis"] = ds.state.TTL.Millis()
		}
	case ds.timers != nil:
		snaps["key"], snaps["namespace"] = ds.op.Key, ds.timers.Namespace
	case ds.opState != nil:
		snaps["element"] = ds.opState.Element
	default:
		snaps["key"], snaps["value"] = ds.broadcast.Key, ds.broadcast.Value
	}
	js, err := json.Marshal(snaps)
	if err != nil {
		return fmt.Errorf("serializer snapshots: %w", err)
	}
	keys := []string{MetaSavepointID, MetaOperator, MetaState, MetaKind, MetaSerializers}
	values := []string{strconv.FormatUint(id, 10), ds.op.UID, ds.name, ds.kind, string(js)}
	if now != nil && ds.state != nil && ds.state.TTL != nil {
		keys = append(keys, MetaNow)
		values = append(values, strconv.FormatInt(*now, 10))
	}
	ds.metadata = arrow.NewMetadata(keys, values)
	return nil
}

// count finds the rows of ds: from the index for keyed data, from the
// metadata for the rest.
func (ds *dataset) count(ctx context.Context, src savepoint.Source, kgs *keygroup.Range) error {
	switch {
	case ds.opState != nil:
		for _, sub := range ds.opState.Subtasks {
			ds.rows += int64(len(sub))
		}
	case ds.broadcast != nil:
		ds.rows = int64(len(ds.broadcast.Entries))
	default:
		r := keygroup.All(ds.op.MaxParallelism)
		if kgs != nil {
			r = r.Intersect(*kgs)
		}
		if r.Len() > 0 {
			var err error
			if ds.index, err = src.Segments(ctx, ds.ref, r); err != nil {
				return err
			}
		}
		for _, s := range ds.index {
			ds.rows += int64(s.Entries)
		}
	}
	return nil
}

// runs cuts ds into files of at most maxRows rows (0: no limit), each
// starting where the previous one ends, so that the files of a dataset in
// name order hold its rows in the savepoint's order, and groups them into
// runs. A dataset without rows still gets one (empty) file, so that
// readers find its columns. It sets ds.files.
func (ds *dataset) runs(maxRows int64) []*run {
	if maxRows <= 0 {
		maxRows = max(ds.rows, 1)
	}
	ds.files = max(1, (ds.rows+maxRows-1)/maxRows)
	newRun := func(seq int64, first int, skip uint64) *run {
		start := seq * maxRows
		return &run{part: part{ds: ds, seq: int(seq), first: first, skip: skip, start: start}, maxRows: maxRows}
	}
	var out []*run
	if ds.index == nil {
		for seq := range ds.files {
			out = append(out, newRun(seq, 0, 0))
		}
	} else {
		out = append(out, newRun(0, 0, 0))
		var at int64 // the first row of index entry i
		for i, s := range ds.index {
			// The first part that starts within entry i, if one does.
			seq := (at + maxRows - 1) / maxRows
			if start := seq * maxRows; start > 0 && start < ds.rows && start-at < int64(s.Entries) {
				out = append(out, newRun(seq, i, uint64(start-at)))
			}
			at += int64(s.Entries)
		}
	}
	for i, r := range out {
		end := ds.files
		if i+1 < len(out) {
			end = int64(out[i+1].seq)
		}
		r.parts = end - int64(r.seq)
		r.allRows = min(ds.rows, end*maxRows) - r.start
	}
	return out
}

// segments returns the index entries [first, end) that r reads rows of.
func (r *run) segments() (first, end int) {
	left := r.allRows + int64(r.skip)
	for end = r.first; end < len(r.ds.index) && left > 0; end++ {
		left -= int64(r.ds.index[end].Entries)
	}
	return r.first, end
}

// part returns the k-th part of r.
func (r *run) nth(k int64) *part {
	p := r.part
	p.seq += int(k)
	p.start += k * r.maxRows
	p.rows = min(r.maxRows, r.ds.rows-p.start)
	return &p
}

// escapeName makes a uid or state name one safe directory name: letters,
// digits, '-', '_', '.' and '~' stay, every other byte becomes %XX, and so
// does a leading '.' or '_', which readers take for hidden files. '=' is
// escaped too: readers take name=value directories for Hive partitions.
func escapeName(s string) string {
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		safe := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '~' ||
			(c == '.' || c == '_') && i > 0
		if safe {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}
