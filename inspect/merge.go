package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/shard"
)

// ScanPart is what a scan of one shard of a savepoint found: the figures
// that shards scanned apart (the map stage of a pipeline) add up, by
// Merge, to those of one scan of the whole, since every figure is a count,
// a maximum or a top list of keys, and a key lies in one segment, which
// lies in one shard. Its binary form carries it between workers.
type ScanPart struct {
	now, top int64
	res      *scanResult
	warnings []WarningInfo
}

// ScanShard scans shard sp of src's segments as Inspect with opts.Scan
// does the whole savepoint.
func ScanShard(ctx context.Context, src savepoint.Source, opts Options, sp shard.Spec) (*ScanPart, error) {
	if err := src.Metadata().CheckRead(-1); err != nil {
		return nil, err
	}
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return nil, err
	}
	segs = shard.Segments(segs, sp)
	res, err := scan(ctx, src, segs, opts.Now, opts.Top, opts.Workers, meter(segs, opts.Progress))
	if err != nil {
		return nil, err
	}
	return &ScanPart{now: opts.Now, top: int64(opts.Top), res: res, warnings: Warnings(src)}, nil
}

// Merge adds o's figures to p's. Parts of different scans (another time,
// another --top, another savepoint's states) are refused.
func (p *ScanPart) Merge(o *ScanPart) error {
	if p.now != o.now || p.top != o.top {
		return fmt.Errorf("inspect: merging a scan at %d with top %d into one at %d with top %d", o.now, o.top, p.now, p.top)
	}
	if len(p.res.states) != len(o.res.states) {
		return fmt.Errorf("inspect: merging a scan of %d states into one of %d", len(o.res.states), len(p.res.states))
	}
	for ref, st := range o.res.states {
		mine, ok := p.res.states[ref]
		if !ok || (mine.ages == nil) != (st.ages == nil) || (st.ages != nil && st.ages.ttlMillis != mine.ages.ttlMillis) {
			return fmt.Errorf("inspect: merging scans of different states (%+v)", ref)
		}
	}
	p.res.merge(o.res)
	p.warnings = append(p.warnings, o.warnings...)
	slices.SortStableFunc(p.warnings, func(a, b WarningInfo) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Offset, b.Offset))
	})
	return nil
}

// Report is the report Inspect with opts.Scan gives of src, from its index
// and the merged parts of every shard of the scan.
func (p *ScanPart) Report(ctx context.Context, src savepoint.Source) (*Report, error) {
	m := src.Metadata()
	want := newScanResult(m, p.now, int(p.top))
	if len(want.states) != len(p.res.states) {
		return nil, fmt.Errorf("inspect: a scan of %d states, but the savepoint has %d", len(p.res.states), len(want.states))
	}
	for ref, st := range want.states {
		got, ok := p.res.states[ref]
		if !ok || (got.ages == nil) != (st.ages == nil) || (st.ages != nil && st.ages.ttlMillis != got.ages.ttlMillis) {
			return nil, fmt.Errorf("inspect: the scan is not of this savepoint's states (%+v)", ref)
		}
	}
	for _, k := range p.topKeys() {
		if _, ok := want.states[k.ref]; !ok || k.ref.Timer {
			return nil, fmt.Errorf("inspect: a top key of no keyed state of the savepoint (%+v)", k.ref)
		}
	}
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return nil, err
	}
	rep := index(src, segs, p.now)
	rep.addScan(m, p.res)
	rep.Warnings = p.warnings
	return rep, nil
}

func (p *ScanPart) topKeys() []hotKey {
	if p.res.byEntries == nil {
		return nil
	}
	return append(slices.Clone(p.res.byEntries.h), p.res.byBytes.h...)
}

// partJSON is ScanPart's binary form. Sizes are sparse (size, count)
// pairs: most of a histogram's counters are zero.
type partJSON struct {
	Now       int64         `json:"now"`
	Top       int64         `json:"top"`
	States    []stateJSON   `json:"states"`
	ByEntries []keyJSON     `json:"by_entries,omitempty"`
	ByBytes   []keyJSON     `json:"by_bytes,omitempty"`
	Warnings  []WarningInfo `json:"warnings,omitempty"`
}

type stateJSON struct {
	Ref       savepoint.StateRef `json:"ref"`
	Sizes     [][2]uint64        `json:"sizes,omitempty"`
	MaxSize   int                `json:"max_size"`
	TTLMillis *int64             `json:"ttl_ms,omitempty"`
	Slots     []uint64           `json:"slots,omitempty"`
	Expired   uint64             `json:"expired,omitempty"`
	MaxTimers uint64             `json:"max_timers,omitempty"`
}

type keyJSON struct {
	Ref     savepoint.StateRef `json:"ref"`
	Key     []byte             `json:"key"`
	Entries uint64             `json:"entries"`
	Bytes   uint64             `json:"bytes"`
}

// MarshalBinary encodes the part for another worker's UnmarshalBinary.
func (p *ScanPart) MarshalBinary() ([]byte, error) {
	out := partJSON{Now: p.now, Top: p.top, Warnings: p.warnings}
	for ref, st := range p.res.states {
		s := stateJSON{Ref: ref, MaxSize: st.sizes.max, MaxTimers: st.maxTimersPerKey}
		if st.sizes.small != nil {
			for size, c := range st.sizes.small {
				if c > 0 {
					s.Sizes = append(s.Sizes, [2]uint64{uint64(size), c})
				}
			}
		}
		for size, c := range st.sizes.large {
			s.Sizes = append(s.Sizes, [2]uint64{uint64(size), c})
		}
		slices.SortFunc(s.Sizes, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
		if st.ages != nil {
			t := st.ages.ttlMillis
			s.TTLMillis, s.Slots, s.Expired = &t, st.ages.slots[:], st.ages.expired
		}
		out.States = append(out.States, s)
	}
	slices.SortFunc(out.States, func(a, b stateJSON) int { return a.Ref.Compare(b.Ref) })
	if p.res.byEntries != nil {
		out.ByEntries, out.ByBytes = keysJSON(p.res.byEntries), keysJSON(p.res.byBytes)
	}
	return json.Marshal(out)
}

func keysJSON(t *topKeys) []keyJSON {
	out := []keyJSON{}
	for _, k := range t.h {
		out = append(out, keyJSON{Ref: k.ref, Key: k.key, Entries: k.entries, Bytes: k.bytes})
	}
	return out
}

// UnmarshalBinary decodes what MarshalBinary encoded, checking that its
// figures fit together.
func (p *ScanPart) UnmarshalBinary(b []byte) error {
	var in partJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("inspect: a scan part: %w", err)
	}
	if in.Top < 0 {
		return fmt.Errorf("inspect: a scan part with top %d", in.Top)
	}
	res := &scanResult{states: map[savepoint.StateRef]*stateScan{}}
	for _, s := range in.States {
		if _, dup := res.states[s.Ref]; dup {
			return fmt.Errorf("inspect: a scan part lists state %+v twice", s.Ref)
		}
		st := &stateScan{maxTimersPerKey: s.MaxTimers}
		for _, sc := range s.Sizes {
			if sc[0] > uint64(s.MaxSize) {
				return fmt.Errorf("inspect: a scan part counts values of %d bytes above its largest, %d", sc[0], s.MaxSize)
			}
			st.sizes.addN(int(sc[0]), sc[1])
		}
		st.sizes.max = s.MaxSize
		if s.TTLMillis != nil {
			if len(s.Slots) != len(ageHist{}.slots) || *s.TTLMillis <= 0 {
				return fmt.Errorf("inspect: a scan part's TTL ages of state %+v are malformed", s.Ref)
			}
			st.ages = newAgeHist(*s.TTLMillis, in.Now)
			copy(st.ages.slots[:], s.Slots)
			st.ages.expired = s.Expired
		}
		res.states[s.Ref] = st
	}
	if in.Top > 0 {
		if len(in.ByEntries) > int(in.Top) || len(in.ByBytes) > int(in.Top) {
			return fmt.Errorf("inspect: a scan part with top %d keeps %d and %d keys", in.Top, len(in.ByEntries), len(in.ByBytes))
		}
		res.byEntries, res.byBytes = newTopKeys(int(in.Top), byEntries), newTopKeys(int(in.Top), byBytes)
		for _, k := range in.ByEntries {
			res.byEntries.offer(hotKey{ref: k.Ref, key: k.Key, entries: k.Entries, bytes: k.Bytes})
		}
		for _, k := range in.ByBytes {
			res.byBytes.offer(hotKey{ref: k.Ref, key: k.Key, entries: k.Entries, bytes: k.Bytes})
		}
	}
	*p = ScanPart{now: in.Now, top: in.Top, res: res, warnings: in.Warnings}
	return nil
}
