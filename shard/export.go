package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// ExportCut is what shard s of an export does: the key groups of keyed
// state and timers it exports (none when ok is false), and whether it also
// exports operator and broadcast state, which belong to no key group and
// go to shard 0.
type ExportCut struct {
	KeyGroups    keygroup.Range
	HasKeyed     bool
	WithNonKeyed bool
}

// Export cuts an export of src: key groups of about equal bytes across
// every keyed operator, so that the datasets' files, in shard order, hold
// the rows in the savepoint's order as a single run's do.
func Export(ctx context.Context, src savepoint.Source, s Spec) (ExportCut, error) {
	m := src.Metadata()
	maxP := 0
	for i := range m.Operators {
		if m.Operators[i].Keyed() {
			maxP = max(maxP, m.Operators[i].MaxParallelism)
		}
	}
	segs, err := savepoint.AllSegments(ctx, src)
	if err != nil {
		return ExportCut{}, err
	}
	r, ok := KeyGroups(segs, maxP, s)
	return ExportCut{KeyGroups: r, HasKeyed: ok, WithNonKeyed: s.Index == 0}, nil
}

// NarrowExport narrows o to shard s of an export of src (see Export): its
// key groups, and operator and broadcast state for shard 0 only. A shard
// that gets no key group exports no keyed row, and still writes each
// keyed dataset's columns.
func NarrowExport(ctx context.Context, src savepoint.Source, s Spec, o *export.Options) error {
	if o.KeyGroups != nil {
		return fmt.Errorf("%w: a sharded export cuts the key groups itself", ErrSpec)
	}
	cut, err := Export(ctx, src, s)
	if err != nil {
		return err
	}
	kgs := cut.KeyGroups
	if !cut.HasKeyed {
		kgs = keygroup.Range{Start: 1, End: 0}
	}
	o.KeyGroups, o.WithNonKeyed = &kgs, cut.WithNonKeyed
	return nil
}

// AssembleExport is the commit step of an export run in shards: it copies
// the files of every part (a directory a shard exported into) into out,
// each dataset's files renumbered part-00000, part-00001, ... in shard
// order then in the part's order, so the rows read in name order are in
// the savepoint's order, as a single run writes them. It does not publish
// out.
func AssembleExport(ctx context.Context, parts []string, out storage.Staging) (files int, err error) {
	next := map[string]int{}
	for i, dir := range parts {
		var names []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 || (!d.IsDir() && !d.Type().IsRegular()) {
				return fmt.Errorf("%s: not a regular file or directory", p)
			}
			if !d.IsDir() {
				rel, err := filepath.Rel(dir, p)
				if err != nil {
					return err
				}
				if !isPartRecord(rel) {
					names = append(names, filepath.ToSlash(rel))
				}
			}
			return nil
		})
		if err != nil {
			return files, fmt.Errorf("shard: part %d (%s): %w", i, dir, err)
		}
		slices.Sort(names)
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				return files, err
			}
			dataset, base := path.Split(name)
			ext := path.Ext(base)
			if dataset == "" || !strings.HasPrefix(base, "part-") {
				return files, fmt.Errorf("shard: part %d (%s): %s is no file of an export's dataset", i, dir, name)
			}
			dst := fmt.Sprintf("%spart-%05d%s", dataset, next[dataset], ext)
			next[dataset]++
			if err := copyFile(ctx, filepath.Join(dir, filepath.FromSlash(name)), out, dst); err != nil {
				return files, fmt.Errorf("shard: part %d: %w", i, err)
			}
			files++
		}
	}
	return files, nil
}

// partFile is the name of an export's file in a bucket: its number in its
// dataset, then the 16 hex digits of the XXH3-64 of its bytes. It is
// compiled when first used, not when every command starts.
var partFile = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^part-[0-9]{5,}-([0-9a-f]{16})(\.[a-z0-9.]+)$`)
})

// maxMarker bounds the marker of a part read into memory: it lists the
// part's files, some hundred bytes each.
const maxMarker = 64 << 20

// AssembleBucketExport is AssembleExport for parts and an out in a bucket:
// each part an export into a bucket, whose marker lists its files. The
// files are copied on the store's side, renumbered as AssembleExport does
// and named after their bytes as every export into a bucket is, and out's
// marker, written last when out is published, lists them with the parts'
// summaries added up. A part without its marker, or whose files are not
// what its marker says, is refused before out is published.
func AssembleBucketExport(ctx context.Context, parts []storage.DirCloser, out storage.Target) (files int, err error) {
	next := map[string]int{}
	var whole export.Summary
	dataset := map[string]int{}
	var written []export.MarkerFile
	// Every part is checked finished before anything is copied.
	markers := make([]*export.MarkerContent, len(parts))
	for i, d := range parts {
		mc, err := readMarker(ctx, d)
		if err != nil {
			return files, rewrite.Refusef("shard %d of %d has no finished export part at %s: %v", i, len(parts), d.Location(), err)
		}
		if mc.Summary == nil {
			return files, fmt.Errorf("shard: part %d (%s): its %s has no summary", i, d.Location(), export.Marker)
		}
		markers[i] = mc
	}
	locations := make([]string, len(parts))
	records := make([]json.RawMessage, len(parts))
	for i, d := range parts {
		locations[i], records[i] = d.Location(), markers[i].Part
	}
	if err := checkParts(locations, records, len(parts)); err != nil {
		return files, err
	}
	for i, d := range parts {
		mc := markers[i]
		for _, ds := range mc.Summary.Datasets {
			j, ok := dataset[ds.Dir]
			if !ok {
				j = len(whole.Datasets)
				dataset[ds.Dir] = j
				whole.Datasets = append(whole.Datasets, export.DatasetSummary{Operator: ds.Operator, State: ds.State, Kind: ds.Kind, Dir: ds.Dir})
			}
			w := &whole.Datasets[j]
			w.Rows, w.Files, w.Bytes = w.Rows+ds.Rows, w.Files+ds.Files, w.Bytes+ds.Bytes
			whole.Rows, whole.Files, whole.Bytes = whole.Rows+ds.Rows, whole.Files+ds.Files, whole.Bytes+ds.Bytes
		}
		// The marker lists the files by name, so each dataset's in their
		// order.
		for _, mf := range mc.Files {
			if err := ctx.Err(); err != nil {
				return files, err
			}
			dir, base := path.Split(mf.Name)
			m := partFile().FindStringSubmatch(base)
			if dir == "" || m == nil {
				return files, fmt.Errorf("shard: part %d (%s): %s is no file of an export's dataset", i, d.Location(), mf.Name)
			}
			f, err := d.Open(ctx, mf.Name)
			if err != nil {
				return files, fmt.Errorf("shard: part %d: %w", i, err)
			}
			if f.Size() != mf.Bytes {
				f.Close()
				return files, fmt.Errorf("shard: part %d (%s): %s holds %d bytes, its %s says %d", i, d.Location(), mf.Name, f.Size(), export.Marker, mf.Bytes)
			}
			name := fmt.Sprintf("%spart-%05d-%s%s", dir, next[dir], m[1], m[2])
			next[dir]++
			err = out.CopyNamed(ctx, f, name)
			f.Close()
			if err != nil {
				return files, fmt.Errorf("shard: part %d: %w", i, err)
			}
			written = append(written, export.MarkerFile{Name: name, Bytes: mf.Bytes})
			files++
		}
	}
	return files, export.WriteMarker(ctx, out, export.MarkerContent{Summary: &whole, Files: written})
}

func readMarker(ctx context.Context, d storage.Dir) (*export.MarkerContent, error) {
	f, err := d.Open(ctx, export.Marker)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size() > maxMarker {
		return nil, fmt.Errorf("its %s holds %d bytes, more than a marker does (%d)", export.Marker, f.Size(), maxMarker)
	}
	b, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
	if err != nil {
		return nil, err
	}
	var mc export.MarkerContent
	if err := json.Unmarshal(b, &mc); err != nil {
		return nil, fmt.Errorf("%s: %w", export.Marker, err)
	}
	return &mc, nil
}

func copyFile(ctx context.Context, from string, out storage.Staging, name string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	w, err := out.Create(ctx, name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, in); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", from, err)
	}
	return w.Close()
}
