package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/inspect"
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
	Path string `json:"path"`
	OK   bool   `json:"ok"`
	*inspect.Verified
}

func runVerify(ctx context.Context, o verifyOptions, args []string, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	// Opening checks the metadata, and for stateproc's layout the data
	// files' sizes and preambles.
	src, err := openSavepoint(ctx, args[0])
	if err != nil {
		return err
	}
	defer src.Close()
	bar := newByteProgress(o.stderr, "verifying")
	v, err := inspect.Verify(ctx, src, inspect.VerifyOptions{Deep: o.deep, Progress: bar.report()})
	bar.end(err)
	if err != nil {
		return err
	}
	sum := verifySummary{Path: args[0], OK: true, Verified: v}
	if o.output == outputJSON {
		return writeJSON(out, sum)
	}
	checks := "checksums, structure, index"
	if o.deep {
		checks += ", every value decoded"
	}
	fmt.Fprintf(out, "Savepoint %s is whole.\n", sum.Path)
	t := newTable(out, "OPERATORS", "SEGMENTS", "ENTRIES", "BYTES", "CHECKED")
	if err := t.Append(v.Operators, v.Segments, v.Entries, humanBytes(float64(v.Bytes)), checks); err != nil {
		return err
	}
	return t.Render()
}
