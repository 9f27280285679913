package cli

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
)

type verifyOptions struct {
	output string
	deep   bool
	stderr io.Writer
}

func newVerifyCmd() *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify SAVEPOINT",
		Short: "Check every checksum and structural rule of a savepoint",
		Long: `Verify reads the whole savepoint on every core and checks every checksum and
every rule of the format: the metadata, the data files' sizes and preambles,
every block's CRC, the order of records, that every key lies in its key group,
and the index's counts against the data. --deep also decodes every key,
namespace, map key and value, and every operator and broadcast state element,
with the serializers restored from the savepoint.

It exits 0 with a short summary when the savepoint is whole, and 4 with the
file, key group and offset of the first corruption it meets.`,
		Example: `  stateproc verify ./savepoints/sp-42
  stateproc verify --deep ./savepoints/sp-42
  stateproc verify -o json ./savepoints/sp-42`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runVerify(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	addOutputFlag(cmd, &o.output)
	cmd.Flags().BoolVar(&o.deep, "deep", false, "also decode every key, namespace, map key and value")
	return cmd
}

// verifySummary is what verify prints when the savepoint is whole.
type verifySummary struct {
	Path      string `json:"path"`
	OK        bool   `json:"ok"`
	Deep      bool   `json:"deep"`
	Operators int    `json:"operators"`
	Segments  int    `json:"segments"`
	Entries   uint64 `json:"entries"`
	Bytes     int64  `json:"bytes"`
}

func runVerify(ctx context.Context, o verifyOptions, args []string, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	// Open checks the metadata, its CRC and rules, and the data files'
	// sizes and preambles.
	r, err := openSavepoint(ctx, args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	m := r.Metadata()
	var decoders [][]*savepoint.Decoder
	if o.deep {
		if decoders, err = restoreDecoders(m); err != nil {
			return err
		}
		if err := verifyNonKeyed(m); err != nil {
			return err
		}
	}
	segs := allSegments(r)
	var entries atomic.Uint64
	// This is Reader.Verify's walk, spread over every core: draining a
	// segment's iterator checks its blocks, its records and its index entry.
	err = walkSegments(ctx, segs, workerCount(), newProgress(o.stderr, segmentBytes(segs), "verifying"),
		func(ctx context.Context, _ int, seg snapshotfmt.Segment) error {
			it := r.Entries(ctx, seg)
			defer it.Close()
			var dec *savepoint.Decoder
			if decoders != nil {
				dec = decoders[seg.Operator][seg.Ref]
			}
			var n uint64
			for it.Next() {
				if dec != nil {
					if _, err := dec.Decode(it.Entry()); err != nil {
						return undecodable(m, seg, n, err)
					}
				}
				n++
			}
			entries.Add(n)
			return it.Err()
		})
	if err != nil {
		return err
	}
	sum := verifySummary{Path: args[0], OK: true, Deep: o.deep, Operators: len(m.Operators), Segments: len(segs),
		Entries: entries.Load(), Bytes: segmentBytes(segs)}
	if o.output == outputJSON {
		return writeJSON(out, sum)
	}
	checks := "checksums, structure, index"
	if o.deep {
		checks += ", every value decoded"
	}
	fmt.Fprintf(out, "Savepoint %s is whole.\n", sum.Path)
	t := newTable(out, "OPERATORS", "SEGMENTS", "ENTRIES", "BYTES", "CHECKED")
	if err := t.Append(sum.Operators, sum.Segments, sum.Entries, humanBytes(float64(sum.Bytes)), checks); err != nil {
		return err
	}
	return t.Render()
}

// restoreDecoders restores the serializers of every state and timer
// service, indexed by operator and ref.
func restoreDecoders(m *savepoint.Metadata) ([][]*savepoint.Decoder, error) {
	out := make([][]*savepoint.Decoder, len(m.Operators))
	for i := range m.Operators {
		op := &m.Operators[i]
		if !op.Keyed() {
			continue
		}
		for s := range op.States {
			d, err := savepoint.NewDecoder(op, &op.States[s])
			if err != nil {
				return nil, metadataCorrupt("a serializer snapshot cannot be restored", err)
			}
			out[i] = append(out[i], d)
		}
		for t := range op.Timers {
			d, err := savepoint.NewTimerDecoder(op, &op.Timers[t])
			if err != nil {
				return nil, metadataCorrupt("a serializer snapshot cannot be restored", err)
			}
			out[i] = append(out[i], d)
		}
	}
	return out, nil
}

// verifyNonKeyed decodes operator and broadcast state, which the metadata
// holds.
func verifyNonKeyed(m *savepoint.Metadata) error {
	for _, op := range m.Operators {
		for _, s := range op.OperatorStates {
			ser, err := serializers.Restore(s.Element)
			if err != nil {
				return metadataCorrupt(fmt.Sprintf("operator %q state %q: serializer cannot be restored", op.UID, s.Name), err)
			}
			for sub, elems := range s.Subtasks {
				for i, b := range elems {
					if _, err := ser.DecodeAny(b); err != nil {
						return metadataCorrupt(fmt.Sprintf("operator %q state %q: subtask %d element %d does not decode", op.UID, s.Name, sub, i), err)
					}
				}
			}
		}
		for _, b := range op.BroadcastStates {
			key, err := serializers.Restore(b.Key)
			if err != nil {
				return metadataCorrupt(fmt.Sprintf("operator %q broadcast state %q: key serializer cannot be restored", op.UID, b.Name), err)
			}
			val, err := serializers.Restore(b.Value)
			if err != nil {
				return metadataCorrupt(fmt.Sprintf("operator %q broadcast state %q: value serializer cannot be restored", op.UID, b.Name), err)
			}
			for i, e := range b.Entries {
				if _, err := key.DecodeAny(e.Key); err != nil {
					return metadataCorrupt(fmt.Sprintf("operator %q broadcast state %q: key of entry %d does not decode", op.UID, b.Name, i), err)
				}
				if _, err := val.DecodeAny(e.Value); err != nil {
					return metadataCorrupt(fmt.Sprintf("operator %q broadcast state %q: value of entry %d does not decode", op.UID, b.Name, i), err)
				}
			}
		}
	}
	return nil
}
