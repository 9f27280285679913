package inspect

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/shard"
)

// VerifyOptions say how deep Verify reads.
type VerifyOptions struct {
	// Deep also decodes every key, namespace, map key and value, and every
	// operator and broadcast state element, with the serializers restored
	// from the savepoint.
	Deep bool
	// Workers is how many segments are read at once; 0 means one per core.
	Workers int
	// Progress is as in Options.
	Progress func(done, total int64)
	// Shard, when set, reads only that shard of the segments (see package
	// shard); the figures are the shard's, and the shards' figures add up
	// to the whole savepoint's.
	Shard shard.Spec
}

// Verified is what Verify read of a savepoint that proved whole. Its JSON
// form is part of the output of stateproc verify -o json.
type Verified struct {
	Layout    string `json:"layout"`
	Deep      bool   `json:"deep"`
	Operators int    `json:"operators"`
	Segments  int    `json:"segments"`
	Entries   uint64 `json:"entries"`
	// Bytes is what the segments take where the layout stores them.
	Bytes int64 `json:"bytes"`
	// Warnings list the bytes that could not be walked without the job's
	// classes, which are no error (see Report.Warnings).
	Warnings []WarningInfo `json:"warnings,omitempty"`
	// Opaque counts, with Deep, the values that decoded into bytes only the
	// job's classes read (Kryo and Java-serialized values of Flink's).
	Opaque []OpaqueInfo `json:"opaque,omitempty"`
}

// Verify reads every segment of src on every core, which checks every
// rule of its layout (for stateproc's: every block's CRC, the order of
// records, that every key lies in its key group, the index's figures
// against the data), and, with opts.Deep, decodes every value. Opening the
// source has checked its metadata. It returns the first problem it meets:
// an error that wraps savepoint.ErrCorrupt and names the file, key group
// and offset.
func Verify(ctx context.Context, src savepoint.Source, opts VerifyOptions) (*Verified, error) {
	m := src.Metadata()
	if err := m.CheckRead(-1); err != nil {
		return nil, err
	}
	var decoders map[savepoint.StateRef]*savepoint.Decoder
	var opaque opaqueCount
	if opts.Deep {
		var err error
		if decoders, err = restoreDecoders(m); err != nil {
			return nil, err
		}
		if err := verifyNonKeyed(m, &opaque); err != nil {
			return nil, err
		}
	}
	var entries atomic.Uint64
	// check reads the entries of segment seg and checks them.
	check := func(seg savepoint.Segment, it savepoint.EntryIterator) error {
		dec, counts := decoders[seg.Ref], opaque.counts(m, seg.Ref)
		var n uint64
		for it.Next() {
			switch {
			case dec == nil:
			case counts:
				d, err := dec.Decode(it.Entry())
				if err != nil {
					return Undecodable(m, placed(seg, it), n, err)
				}
				opaque.entry(m, seg.Ref, d)
			default:
				// Validate fails exactly where Decode does, with its
				// error, and builds no values that nothing reads.
				if err := dec.Validate(it.Entry()); err != nil {
					return Undecodable(m, placed(seg, it), n, err)
				}
			}
			n++
		}
		entries.Add(n)
		return it.Err()
	}
	var segs []savepoint.Segment
	var err error
	if w, ok := src.(segmentWalker); ok && opts.Shard.Count <= 1 {
		// A source that keeps no index counts its segments by reading
		// every entry: they are checked in that read, not in a second.
		segs, err = w.CountSegments(ctx, opts.Workers, func(_ int, ref savepoint.StateRef, it savepoint.EntryIterator) error {
			return check(savepoint.Segment{Ref: ref, Stats: savepoint.Stats{KeyGroup: -1}}, it)
		}, opts.Progress)
	} else {
		segs, err = verifySegments(ctx, src, opts, check)
	}
	if err != nil {
		return nil, err
	}
	v := &Verified{Layout: src.Layout().String(), Deep: opts.Deep, Operators: len(m.Operators), Segments: len(segs), Entries: entries.Load()}
	for _, s := range segs {
		v.Bytes += s.Length
	}
	v.Warnings = Warnings(src)
	v.Opaque = opaque.report()
	return v, nil
}

// verifySegments has check read every segment of src, or of opts.Shard's
// share of them, on opts.Workers workers, and returns the segments.
func verifySegments(ctx context.Context, src savepoint.Source, opts VerifyOptions, check func(savepoint.Segment, savepoint.EntryIterator) error) ([]savepoint.Segment, error) {
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return nil, err
	}
	segs = shard.Segments(segs, opts.Shard)
	progress := meter(segs, opts.Progress)
	walk := savepoint.WalkSegments(ctx, src, segs)
	defer walk.Close()
	err = workers.Run(ctx, len(segs), opts.Workers, func(ctx context.Context, _, i int) error {
		it := walk.Entries(ctx, i)
		defer it.Close()
		if err := check(segs[i], it); err != nil {
			return err
		}
		if progress != nil {
			progress(segs[i].Length)
		}
		return nil
	})
	return segs, err
}

// placed is seg as an error names it: where its walk's iterator says it
// lies, when it says so (the segments a walk counts are known whole only
// after it).
func placed(seg savepoint.Segment, it savepoint.EntryIterator) savepoint.Segment {
	if p, ok := it.(interface{ Segment() savepoint.Segment }); ok {
		return p.Segment()
	}
	return seg
}

// restoreDecoders restores the serializers of every state and timer
// service of the keyed operators.
func restoreDecoders(m *savepoint.Metadata) (map[savepoint.StateRef]*savepoint.Decoder, error) {
	out := map[savepoint.StateRef]*savepoint.Decoder{}
	for i := range m.Operators {
		op := &m.Operators[i]
		if !op.Keyed() {
			continue
		}
		for _, ref := range m.Refs(i) {
			var d *savepoint.Decoder
			var err error
			if ks := m.KeyedState(ref); ks != nil {
				d, err = savepoint.NewDecoder(op, ks)
			} else {
				d, err = savepoint.NewTimerDecoder(op, m.TimerService(ref))
			}
			if err != nil {
				return nil, MetadataCorrupt("a serializer snapshot cannot be restored", err)
			}
			out[ref] = d
		}
	}
	return out, nil
}

// verifyNonKeyed decodes operator and broadcast state, which the metadata
// holds.
func verifyNonKeyed(m *savepoint.Metadata, opaque *opaqueCount) error {
	for _, op := range m.Operators {
		for _, s := range op.OperatorStates {
			ser, err := serializers.Restore(s.Element)
			if err != nil {
				return MetadataCorrupt(fmt.Sprintf("operator %q state %q: serializer cannot be restored", op.UID, s.Name), err)
			}
			for sub, elems := range s.Subtasks {
				for i, b := range elems {
					v, err := ser.DecodeAny(b)
					if err != nil {
						return MetadataCorrupt(fmt.Sprintf("operator %q state %q: subtask %d element %d does not decode", op.UID, s.Name, sub, i), err)
					}
					opaque.note(s.Element, v)
				}
			}
		}
		for _, b := range op.BroadcastStates {
			key, err := serializers.Restore(b.Key)
			if err != nil {
				return MetadataCorrupt(fmt.Sprintf("operator %q broadcast state %q: key serializer cannot be restored", op.UID, b.Name), err)
			}
			val, err := serializers.Restore(b.Value)
			if err != nil {
				return MetadataCorrupt(fmt.Sprintf("operator %q broadcast state %q: value serializer cannot be restored", op.UID, b.Name), err)
			}
			for i, e := range b.Entries {
				kv, err := key.DecodeAny(e.Key)
				if err != nil {
					return MetadataCorrupt(fmt.Sprintf("operator %q broadcast state %q: key of entry %d does not decode", op.UID, b.Name, i), err)
				}
				vv, err := val.DecodeAny(e.Value)
				if err != nil {
					return MetadataCorrupt(fmt.Sprintf("operator %q broadcast state %q: value of entry %d does not decode", op.UID, b.Name, i), err)
				}
				opaque.note(b.Key, kv)
				opaque.note(b.Value, vv)
			}
		}
	}
	return nil
}
