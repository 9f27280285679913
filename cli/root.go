package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/bootstrap"
	"github.com/stateproc/stateproc/compat"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// Exit codes of the stateproc command.
const (
	ExitOK           = 0
	ExitFailure      = 1
	ExitUsage        = 2
	ExitIncompatible = 3
	ExitBadInput     = 4
	// ExitDiffer: diff --exit-code found the savepoints' state differs.
	ExitDiffer = 5
)

// UsageError is a mistake in how a command was called.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitCode maps an error to the command's exit code.
func ExitCode(err error) int {
	var u *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errDiffer):
		return ExitDiffer
	case errors.As(err, &u), errors.Is(err, storage.ErrExists):
		return ExitUsage
	case errors.Is(err, compat.ErrIncompatible):
		return ExitIncompatible
	case errors.Is(err, storage.ErrChanged):
		// The savepoint changed under the read (a forced rewrite replaced
		// it): whatever a reader made of what it found, the input is not
		// damaged, and a new run reads it whole.
		return ExitFailure
	case savepoint.BadInput(err), errors.Is(err, storage.ErrNotRegular), errors.Is(err, storage.ErrBadName),
		errors.Is(err, bootstrap.ErrBadData):
		return ExitBadInput
	}
	return ExitFailure
}

// hint is a second line printed under an error, telling what to do.
func hint(err error) string {
	var u *UsageError
	switch {
	case errors.As(err, &u):
		return "run with --help for usage"
	case errors.Is(err, storage.ErrExists):
		return "choose another target or pass --force"
	case errors.Is(err, storage.ErrChanged):
		return "the savepoint was replaced while it was read (a forced rewrite into it, say); run the command again"
	case errors.Is(err, snapshotfmt.ErrNewerVersion):
		return "use a newer stateproc to read this savepoint"
	case errors.Is(err, savepoint.ErrUnsupported):
		return "this stateproc cannot read that part of the savepoint; stateproc inspect lists what it reads"
	case errors.Is(err, savepoint.ErrNotSavepoint):
		return "point at a savepoint directory (the one holding _metadata)"
	case errors.Is(err, savepoint.ErrCorrupt):
		return "the savepoint is damaged; stateproc verify tells where"
	case errors.Is(err, bootstrap.ErrBadData):
		return "fix the rows named (file, row, column); bootstrap --dry-run checks them without writing"
	case storage.FromStore(err):
		return "check the bucket and the URL's endpoint and region, and the credentials the store's SDK finds (environment, shared config, instance role)"
	}
	return ""
}

// NewRoot returns the stateproc command with every subcommand.
func NewRoot() *cobra.Command { return newRoot(new(cpuProfile), nil) }

// newRoot builds the root command with the subcommands given, or with
// every one if nil.
func newRoot(prof *cpuProfile, cmds []*cobra.Command) *cobra.Command {
	var pathMap []string
	root := &cobra.Command{
		Use:           "stateproc",
		Short:         "Inspect, export and rewrite stateproc savepoints without the job's code",
		Version:       "stateproc",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := withPathMap(cmd, pathMap); err != nil {
				return err
			}
			if err := givenEmpty(cmd, "now"); err != nil {
				return err
			}
			return prof.start()
		},
		// Without a command there is nothing to do: the help goes to
		// stderr and the exit code is a usage error's, as for an unknown
		// command.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			cmd.Help()
			return usagef("a command is required")
		},
	}
	// Any Version turns on cobra's --version; the template prints the
	// build's, read only when --version is given.
	addVersionFunc()
	root.SetVersionTemplate("{{stateprocVersion}}\n")
	root.PersistentFlags().StringVar(&prof.path, "cpuprofile", "",
		"write a CPU profile of the command to `FILE`, for go tool pprof and the build's profile-guided optimization")
	addPathMapFlag(root, &pathMap)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
	if cmds == nil {
		for _, c := range subcommands() {
			cmds = append(cmds, c.build())
		}
	}
	root.AddCommand(cmds...)
	return root
}

// subcommand is a command's name and its constructor.
type subcommand struct {
	name  string
	build func() *cobra.Command
}

// subcommands lists every command, in the order of the help; each lives
// in a cmd_<name>.go file.
func subcommands() []subcommand {
	return []subcommand{
		{"inspect", newInspectCmd}, {"dump", newDumpCmd}, {"verify", newVerifyCmd}, {"size", newSizeCmd},
		{"export", newExportCmd}, {"commit", newCommitCmd},
		{"rescale", newRescaleCmd}, {"prune-ttl", newPruneTTLCmd}, {"operator", newOperatorCmd}, {"convert", newConvertCmd},
		{"check", newCheckCmd}, {"migrate", newMigrateCmd},
		{"bootstrap", newBootstrapCmd}, {"diff", newDiffCmd}, {"report", newReportCmd},
	}
}

// invoked returns the one command that args run, built alone, so that
// start-up need not build the flags and help of fourteen others. cobra
// picks it, from a root whose subcommands are placeholders of the same
// names, so that flags before the command's name are read as cobra reads
// them. It returns nil, for the whole tree, when args run no command
// (the root's help, help, completion) or a mistyped one, whose
// suggestions need every name.
func invoked(args []string) []*cobra.Command {
	cmds := subcommands()
	stubs := make([]*cobra.Command, len(cmds))
	for i, c := range cmds {
		stubs[i] = &cobra.Command{Use: c.name}
	}
	probe := newRoot(new(cpuProfile), stubs)
	found, _, err := probe.Find(args)
	if err != nil || found == probe {
		return nil
	}
	for _, c := range cmds {
		if c.name == found.Name() {
			return []*cobra.Command{c.build()}
		}
	}
	return nil
}

// Main runs stateproc with args and returns the exit code. Errors go to
// stderr as one line, with a hint when there is one.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	prof := new(cpuProfile)
	root := newRoot(prof, invoked(args))
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(withTransfers(ctx, new(storage.Counters)))
	if perr := prof.stop(); err == nil {
		err = perr
	}
	if err == nil {
		return ExitOK
	}
	if isCobraUsage(err) {
		err = &UsageError{Err: err}
	}
	fmt.Fprintf(stderr, "stateproc: %v\n", err)
	if h := hint(err); h != "" {
		fmt.Fprintf(stderr, "hint: %s\n", h)
	}
	return ExitCode(err)
}

// isCobraUsage recognizes cobra's own argument and command errors, which
// it does not type.
func isCobraUsage(err error) bool {
	var u *UsageError
	if errors.As(err, &u) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand", "invalid argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// stderrIsTerminal reports whether progress output may be drawn.
func stderrIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f.Fd())
}
