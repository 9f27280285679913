package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/evolve"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// targetFlags say what a savepoint is held against, for check and migrate.
type targetFlags struct {
	job              string
	schemas          []string
	allowNonRestored bool
}

func addTargetFlags(cmd *cobra.Command, f *targetFlags) {
	cmd.Flags().StringVar(&f.job, "job", "", "the job's manifest: the `job.json` a built job prints with -manifest")
	cmd.Flags().StringArrayVar(&f.schemas, "schema", nil, "instead of --job, give one state a new Avro schema: `UID/STATE=FILE.avsc`; repeatable")
	cmd.Flags().BoolVar(&f.allowNonRestored, "allow-non-restored-state", false, "drop what the job no longer declares instead of finding it incompatible, as the engine's switch does")
}

// check validates the flags before anything is opened.
func (f *targetFlags) check() error {
	if (f.job == "") == (len(f.schemas) == 0) {
		return usagef("give either --job or --schema")
	}
	for _, s := range f.schemas {
		if name, file, ok := strings.Cut(s, "="); !ok || file == "" || !strings.Contains(name, "/") {
			return usagef("--schema %q: want UID/STATE=FILE.avsc", s)
		}
	}
	return nil
}

// target reads the manifest or the schemas. Unreadable ones are usage
// errors: they are the command's arguments, not its input savepoint.
func (f *targetFlags) target(meta *savepoint.Metadata) (evolve.Target, error) {
	if f.job != "" {
		m, err := readManifest(f.job)
		if err != nil {
			return evolve.Target{}, err
		}
		t, err := evolve.JobTarget(m)
		if err != nil {
			return evolve.Target{}, usagef("--job %s: %v", f.job, err)
		}
		return t, nil
	}
	var changes []evolve.SchemaChange
	for _, s := range f.schemas {
		name, file, _ := strings.Cut(s, "=")
		uid, state, _ := strings.Cut(name, "/")
		b, err := os.ReadFile(file)
		if err != nil {
			return evolve.Target{}, usagef("--schema %s: %v", s, err)
		}
		changes = append(changes, evolve.SchemaChange{Operator: uid, State: state, Schema: string(b), From: file})
	}
	t, err := evolve.SchemaTarget(meta, changes)
	return t, rewriteError(err)
}

type checkOptions struct {
	targetFlags
	output string
}

func newCheckCmd() *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check SAVEPOINT --job job.json",
		Short: "Say whether a new build of the job can restore a savepoint (exit 3 when it cannot)",
		Long: `Check decides, as the engine does when it restores, whether the job described by
--job (the manifest a built job prints with -manifest, without running) can
restore the savepoint, and says for every operator and state:

  compatible as is            restored unchanged
  compatible after migration  restored with every value rewritten for the job's
                              serializer (stateproc migrate does it ahead)
  incompatible                the restore fails; the reason says why
  new                         the job declares it, the savepoint lacks it: it
                              starts empty
  dropped                     the job no longer declares it and
                              --allow-non-restored-state drops it

Operators are matched by uid. Values follow the Avro specification's schema
resolution, stricter on logical types: a field added without a default, a
type change Avro cannot promote or a changed logical type is incompatible. A key or map-key serializer, a state's
namespace, the element serializer of operator state and the serializers of
broadcast state must stay as they are; so must a state's kind. Max parallelism
stays the savepoint's unless the job fixed another. Turning TTL on or off
is a migration. What the job no longer declares is incompatible unless
--allow-non-restored-state, the engine's switch of the same name.

Only the metadata is read, except for a state whose new Avro schema removed a
union branch, or an enum symbol without a default, or would take some values
past the bounds every reader keeps (1000 levels of nesting, 65536 array items
that take no bytes): its values are read, and the first that has no reading
makes it incompatible (data_dependent in the JSON report). Reasons name every incompatibility and every change,
including those restored as is (a TTL of another length, another
parallelism).

--schema UID/STATE=FILE.avsc checks the savepoint's own job with a new Avro
schema for one state instead (repeatable).

Exit codes: 0 the job can restore the savepoint, 3 it cannot, 2 bad flags or
manifest, 4 the savepoint is not readable.`,
		Example: `  go run ./examples/gatewaymeter -manifest > job.json
  stateproc check ./savepoints/sp-42 --job job.json
  stateproc check ./savepoints/sp-42 --job job.json --allow-non-restored-state -o json
  stateproc check ./savepoints/sp-42 --schema assemble/open=open-v2.avsc`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	addTargetFlags(cmd, &o.targetFlags)
	addOutputFlag(cmd, &o.output)
	return cmd
}

func runCheck(ctx context.Context, o checkOptions, args []string, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if err := o.targetFlags.check(); err != nil {
		return err
	}
	r, err := openSavepoint(ctx, args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	t, err := o.target(r.Metadata())
	if err != nil {
		return err
	}
	rep, err := evolve.Check(ctx, r, t, evolve.Options{AllowNonRestoredState: o.allowNonRestored})
	if err != nil {
		return err
	}
	if o.output == outputJSON {
		err = writeJSON(out, struct {
			Savepoint string `json:"savepoint"`
			*evolve.Report
		}{storage.Shown(args[0]), rep})
	} else {
		fmt.Fprintf(out, "Savepoint %s against %s: %s\n", storage.Shown(args[0]), rep.Target, summary(rep))
		err = verdictTable(out, rep, false)
	}
	if err != nil {
		return err
	}
	return notRestorable(rep, storage.Shown(args[0]))
}

// summary is the one-line verdict of a report.
func summary(rep *evolve.Report) string {
	if !rep.Restorable {
		return fmt.Sprintf("not restorable, %d incompatible.", len(rep.Incompatible()))
	}
	n := 0
	for _, it := range rep.Items {
		if it.Verdict == compat.AfterMigration {
			n++
		}
	}
	if n == 0 {
		return "restorable as is."
	}
	return fmt.Sprintf("restorable, %d after migration.", n)
}

// notRestorable is the error, exit code 3, of a report that is not
// restorable.
func notRestorable(rep *evolve.Report, input string) error {
	bad := rep.Incompatible()
	if len(bad) == 0 {
		return nil
	}
	first := bad[0]
	msg := fmt.Sprintf("%s cannot restore %s: %s %s", rep.Target, input, first.What, itemName(first))
	if first.What == compat.Operator {
		msg = fmt.Sprintf("%s cannot restore %s: operator %s", rep.Target, input, first.Operator)
	}
	msg += ": " + first.Reason
	if len(bad) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(bad)-1)
	}
	return fmt.Errorf("%w: %s", compat.ErrIncompatible, msg)
}

func itemName(it evolve.Item) string {
	if it.What == compat.Operator {
		return it.Operator
	}
	return it.Operator + "/" + it.Name
}

// verdictTable prints a report's items; with migrated, what migrate did
// with the entries of each keyed state and timer service, and only those
// and the items that are not as is.
func verdictTable(out io.Writer, rep *evolve.Report, migrated bool) error {
	header := []any{"OPERATOR", "STATE", "KIND", "VERDICT"}
	if migrated {
		header = append(header, "ENTRIES", "VALUE BYTES")
	}
	t := newTable(out, append(header, "REASON")...)
	// Reasons can be long: wrapped, the table stays readable in a terminal.
	t.wrap = 72
	for _, it := range rep.Items {
		if migrated && it.Migrated == nil && it.Verdict == compat.AsIs {
			continue
		}
		name, kind := it.Name, it.Kind
		switch {
		case it.What == compat.Operator:
			name, kind = "-", "operator"
		case kind == "":
			kind = string(it.What)
		}
		row := []any{it.Operator, name, kind, it.Verdict.String()}
		if migrated {
			row = append(row, migratedCells(it.Migrated)...)
		}
		reason := it.Reason
		if reason == "" {
			reason = "-"
		}
		t.Append(append(row, reason)...)
	}
	return t.Render()
}

func migratedCells(m *evolve.Migrated) []any {
	switch {
	case m == nil:
		return []any{"-", "-"}
	case !m.Rewritten:
		return []any{m.Entries, "copied"}
	}
	return []any{m.Entries, humanBytes(float64(m.ValueBytesBefore)) + " → " + humanBytes(float64(m.ValueBytesAfter))}
}
