package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// PartName is the file beside a local part of an export run in shards
// that records what it is a part of; a part in a bucket records it in its
// marker. A commit compares them, so that parts of different inputs,
// formats or flags are never put together.
const PartName = "_PART"

// PartOf is what a part of a command run in shards is a part of: the same
// for every part of one run but Shard.
type PartOf struct {
	Command string `json:"command"`
	// Input identifies the input savepoint by its id, creation time and
	// operators, not by where it lies: the shards may read copies of it.
	Input   string `json:"input"`
	Options string `json:"options"`
	Shard   int    `json:"shard"`
	Count   int    `json:"count"`
}

// InputOf is PartOf.Input for the savepoint of m.
func InputOf(m *savepoint.Metadata) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "id %d, created %d, operators", m.ID, m.CreatedAt)
	for _, op := range m.Operators {
		fmt.Fprintf(&b, " %s/%d/%d", op.UID, op.Parallelism, op.MaxParallelism)
	}
	return b.String()
}

// JSON is p as a part records it.
func (p PartOf) JSON() json.RawMessage {
	b, _ := json.Marshal(p)
	return b
}

// ExportPartOf is what a part of an export of the savepoint of m run in
// shards is a part of: o's flags that shape the files, with sp's shard.
func ExportPartOf(m *savepoint.Metadata, o export.Options, sp Spec) PartOf {
	now := "none"
	if o.Now != nil {
		now = fmt.Sprint(*o.Now)
	}
	return PartOf{Command: "export", Input: InputOf(m), Shard: sp.Index, Count: sp.Count,
		Options: fmt.Sprintf("format %s, compression %s, operator %q, state %q, now %s, max rows per file %d, row group rows %d",
			cmpOr(string(o.Format), string(export.Parquet)), cmpOr(string(o.Compression), string(export.Zstd)), o.Operator, o.State, now, o.MaxRowsPerFile, o.RowGroupRows)}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// RecordPart writes p beside the part at location, into its staging,
// after the export; a part in a bucket records it in its marker instead
// (export.Options.Part), and nothing is written after the marker.
func RecordPart(ctx context.Context, out storage.Staging, location string, p PartOf) error {
	if loc, err := storage.ParseLocation(location); err == nil && loc.IsBucket() {
		return nil
	}
	return writePart(ctx, out, p)
}

// writePart writes p beside a local part, into its staging.
func writePart(ctx context.Context, out storage.Staging, p PartOf) error {
	w, err := out.Create(ctx, PartName)
	if err != nil {
		return err
	}
	if _, err := w.Write(p.JSON()); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// readLocalPart reads the record of the local part in dir.
func readLocalPart(dir string) (json.RawMessage, error) {
	f, err := os.Open(filepath.Join(dir, PartName))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxMarker))
}

// checkParts refuses parts that are not of one run in n shards: each must
// record what it is a part of, all the same output, part i shard i of n.
func checkParts(locations []string, records []json.RawMessage, n int) error {
	var first PartOf
	for i, rec := range records {
		var p PartOf
		if len(rec) == 0 {
			return rewrite.Refusef("part %d (%s) does not say what it is a part of: it was not written by a command run in shards", i, storage.Shown(locations[i]))
		}
		if err := json.Unmarshal(rec, &p); err != nil {
			return rewrite.Refusef("part %d (%s): %s: %v", i, storage.Shown(locations[i]), PartName, err)
		}
		if p.Shard != i || p.Count != n {
			return rewrite.Refusef("part %d (%s) is shard %d of %d, not %d of %d", i, storage.Shown(locations[i]), p.Shard, p.Count, i, n)
		}
		if i == 0 {
			first = p
			continue
		}
		for _, d := range []struct{ what, a, b string }{
			{"command", first.Command, p.Command}, {"input savepoint", first.Input, p.Input}, {"options", first.Options, p.Options},
		} {
			if d.a != d.b {
				return rewrite.Refusef("part %d (%s) is not of the same output as part 0: its %s differ%s (%s, not %s)", i, storage.Shown(locations[i]), d.what, verbS(d.what), d.b, d.a)
			}
		}
	}
	return nil
}

// isPartRecord reports whether name, a file at a local part's root, is its
// record rather than a dataset's file.
func isPartRecord(name string) bool { return name == PartName }

// verbS is the s of "differs" for a singular what.
func verbS(what string) string {
	if what == "options" {
		return ""
	}
	return "s"
}
