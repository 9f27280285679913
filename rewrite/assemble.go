package rewrite

import (
	"context"
	"fmt"
	"slices"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// Assemble is the commit step of a rewrite run in shards: it writes into
// opts.Out the savepoint whose parts are parts, in shard order. Each part
// is a savepoint a shard wrote with the whole output's metadata and its own
// share of the output's data files: a run of segments of one or more
// files, each part's file created under the name the whole file gets. The
// whole file is the preamble, then the segments of every part that holds
// the file, in shard order, copied as bytes and checked on the way, so a
// single run and the assembled shards give byte-identical files and names.
// The metadata is written last (Commit), under the same publishing rule as
// any rewrite's. Parts that disagree on the metadata are refused.
func Assemble(ctx context.Context, input string, parts []savepoint.Source, opts Options, n int) error {
	if len(parts) == 0 {
		return refusef("no parts to assemble")
	}
	readers := make([]*snapshotfmt.Reader, len(parts))
	for i, p := range parts {
		// A part in a bucket is read through a wrapper of the reader.
		r, ok := canonical(p)
		if !ok {
			return refusef("part %d is a %s, not a part a shard wrote", i, p.Layout())
		}
		if err := sameOutput(r.Metadata(), parts[0].Metadata()); err != nil {
			return refusef("part %d is not of the same output as part 0: %v", i, err)
		}
		readers[i] = r
	}
	type piece struct {
		part int
		segs []savepoint.Segment
	}
	byName := map[string][]piece{}
	var names []string
	for i, r := range readers {
		segs, err := savepoint.AllSegments(ctx, r)
		if err != nil {
			return err
		}
		inFile := map[string][]savepoint.Segment{}
		for _, s := range segs {
			inFile[s.File] = append(inFile[s.File], s)
		}
		for _, f := range r.DataFiles() {
			name := GivenName(f)
			if _, ok := byName[name]; !ok {
				names = append(names, name)
			}
			fs := inFile[f]
			slices.SortFunc(fs, func(a, b savepoint.Segment) int { return int(a.Offset - b.Offset) })
			byName[name] = append(byName[name], piece{part: i, segs: fs})
		}
	}
	slices.Sort(names)
	meta := *parts[0].Metadata()
	if opts.Writer.Compression == snapshotfmt.CodecNone {
		// Encoding nothing, the writer only needs options it accepts.
		opts.Writer = snapshotfmt.Options{}
	}
	o, err := Create(ctx, input, &meta, opts)
	if err != nil {
		return err
	}
	defer o.Close()
	err = workers.Run(ctx, len(names), n, func(ctx context.Context, _, i int) error {
		f, err := o.CreateFile(ctx, names[i])
		if err != nil {
			return err
		}
		for _, pc := range byName[names[i]] {
			for _, s := range pc.segs {
				if err := f.CopySegment(ctx, readers[pc.part], s, s.Ref, s.KeyGroup); err != nil {
					f.Close()
					return fmt.Errorf("part %d: %w", pc.part, err)
				}
			}
		}
		return f.Close()
	})
	if err != nil {
		return err
	}
	return o.Commit(ctx)
}

// sameOutput reports how two parts' metadata differ where every shard of
// one rewrite writes the same: the output's identity, lineage and
// operators.
func sameOutput(a, b *savepoint.Metadata) error {
	switch {
	case a.ID != b.ID || a.CreatedAt != b.CreatedAt:
		return fmt.Errorf("savepoint %d taken at %d, not %d at %d", a.ID, a.CreatedAt, b.ID, b.CreatedAt)
	case !slices.Equal(a.Lineage, b.Lineage):
		return fmt.Errorf("its lineage differs")
	case len(a.Operators) != len(b.Operators):
		return fmt.Errorf("%d operators, not %d", len(a.Operators), len(b.Operators))
	}
	for i := range a.Operators {
		x, y := &a.Operators[i], &b.Operators[i]
		if x.UID != y.UID || x.Parallelism != y.Parallelism || x.MaxParallelism != y.MaxParallelism || len(x.States) != len(y.States) {
			return fmt.Errorf("operator %d differs (%s, %s)", i, x.UID, y.UID)
		}
	}
	return nil
}
