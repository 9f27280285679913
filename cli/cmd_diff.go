package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/diff"
)

type diffOptions struct {
	output   string
	operator string
	state    string
	keys     int
	exitCode bool
}

// errDiffer ends diff --exit-code when the savepoints differ.
var errDiffer = errors.New("the savepoints differ")

func newDiffCmd() *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two savepoints by key, state by state",
		Long: `Diff compares savepoint B with savepoint A. Operators are matched by uid and
states by name; for every keyed state it counts the keys only in A, only in B,
present in both with an entry changed, and unchanged, the same for entries,
and shows each side's entries and bytes. An entry of a value state is a (key,
namespace), of a map state a (key, namespace, map key), of a list state an
element at its position; it is changed when its stored value, TTL timestamp
included, differs. Timers compare one by one as (key, namespace, time).
Operator list state compares as the multiset of every subtask's elements,
broadcast state by key.

It compares by key, not by key group: when an operator's max parallelism
differs, B's operator is first re-bucketed to A's key groups in a temporary
directory (as rescale does, in bounded memory; it needs about that
operator's size in free space). Memory stays bounded whatever the size.

--keys N lists the first N keys of each kind per state, in key-group order,
decoded as dump prints them. With --exit-code, diff exits 5 when keyed data,
timers, operator or broadcast state differ, and 0 when they do not; max
parallelism, parallelism, ids, lineage and file names are no difference.`,
		Example: `  stateproc diff ./savepoints/sp-41 ./savepoints/sp-42
  stateproc diff ./sp-42 ./sp-42-migrated --operator assemble --state open --keys 3
  stateproc diff --exit-code ./sp-42 ./sp-42-rescaled && echo same state
  stateproc diff -o json ./sp-41 ./sp-42 | jq '.states[] | {name, keys}'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	addOutputFlag(cmd, &o.output)
	f.StringVar(&o.operator, "operator", "", "compare only the operator with this `uid`")
	f.StringVar(&o.state, "state", "", "compare only the states with this `name`")
	f.IntVar(&o.keys, "keys", 0, "list `N` example keys of each kind per state")
	f.BoolVar(&o.exitCode, "exit-code", false, "exit 5 when the savepoints' state differs, 0 when it does not")
	return cmd
}

func runDiff(ctx context.Context, o diffOptions, args []string, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.keys < 0 {
		return usagef("--keys must be 0 or more, not %d", o.keys)
	}
	srcs, err := openSavepoints(ctx, args[:2])
	if err != nil {
		return err
	}
	a, b := srcs[0], srcs[1]
	defer a.Close()
	defer b.Close()
	rep, err := diff.Compare(ctx, diff.Side{Source: a, Path: args[0]}, diff.Side{Source: b, Path: args[1]},
		diff.Options{Operator: o.operator, State: o.state, Examples: o.keys})
	if errors.Is(err, diff.ErrNotFound) {
		return &UsageError{Err: err}
	} else if err != nil {
		return err
	}
	if o.output == outputJSON {
		err = writeJSON(out, rep)
	} else {
		err = writeDiffTables(out, rep)
	}
	if err == nil && o.exitCode && rep.Differ {
		return errDiffer
	}
	return err
}

func writeDiffTables(w io.Writer, rep *diff.Report) error {
	for _, s := range []struct {
		name string
		sp   diff.SavepointInfo
	}{{"A", rep.A}, {"B", rep.B}} {
		fmt.Fprintf(w, "%s: %s\n   %s, id %d, created %s\n", s.name, s.sp.Path, s.sp.Layout, s.sp.ID, formatTime(int64(s.sp.Created)))
	}
	differ := 0
	for _, s := range rep.States {
		if s.Entries.Differ() {
			differ++
		}
	}
	for _, s := range rep.OperatorStates {
		if s.Entries.Differ() {
			differ++
		}
	}
	if rep.Differ {
		fmt.Fprintf(w, "%d of %d states differ.\n", differ, len(rep.States)+len(rep.OperatorStates))
	} else {
		fmt.Fprintln(w, "No difference in keyed data, timers, operator or broadcast state.")
	}
	for _, op := range rep.Operators {
		switch {
		case op.In == diff.OnlyA:
			fmt.Fprintf(w, "  operator %s is only in A\n", op.UID)
		case op.In == diff.OnlyB:
			fmt.Fprintf(w, "  operator %s is only in B\n", op.UID)
		case op.Rebucketed:
			fmt.Fprintf(w, "  operator %s: max parallelism %d in A, %d in B (compared in A's key groups)\n", op.UID, op.A.MaxParallelism, op.B.MaxParallelism)
		}
	}
	s := section(w, "Keyed state and timers (keys; timers for timer services)",
		"OPERATOR", "STATE", "KIND", "ONLY IN A", "ONLY IN B", "CHANGED", "UNCHANGED", "ENTRIES A -> B", "BYTES A -> B")
	for _, st := range rep.States {
		c := st.Entries
		if st.Keys != nil {
			c = *st.Keys
		}
		kind := st.Kind
		if st.SerializersChanged {
			kind += " (serializers changed)"
		}
		s.add(st.Operator, st.Name, kind, c.OnlyA, c.OnlyB, c.Changed, c.Unchanged,
			figure(st.A, st.B, func(f *diff.Figures) string { return fmt.Sprint(f.Entries) }),
			figure(st.A, st.B, func(f *diff.Figures) string { return humanBytes(float64(f.Bytes)) }))
	}
	if err := s.render(); err != nil {
		return err
	}
	s = section(w, "Entries of keyed state", "OPERATOR", "STATE", "ONLY IN A", "ONLY IN B", "CHANGED", "UNCHANGED")
	for _, st := range rep.States {
		if st.Keys != nil {
			s.add(st.Operator, st.Name, st.Entries.OnlyA, st.Entries.OnlyB, st.Entries.Changed, st.Entries.Unchanged)
		}
	}
	if err := s.render(); err != nil {
		return err
	}
	s = section(w, "Operator and broadcast state (elements; keys for broadcast state)",
		"OPERATOR", "STATE", "DISTRIBUTION", "ONLY IN A", "ONLY IN B", "CHANGED", "UNCHANGED", "ENTRIES A -> B")
	for _, st := range rep.OperatorStates {
		c := st.Entries
		s.add(st.Operator, st.Name, st.Distribution, c.OnlyA, c.OnlyB, c.Changed, c.Unchanged,
			figure(st.A, st.B, func(f *diff.Figures) string { return fmt.Sprint(f.Entries) }))
	}
	if err := s.render(); err != nil {
		return err
	}
	return writeDiffExamples(w, rep)
}

// figure renders a figure of both sides as "A -> B", a dash for a side
// that lacks the state.
func figure(a, b *diff.Figures, f func(*diff.Figures) string) string {
	side := func(x *diff.Figures) string {
		if x == nil {
			return "-"
		}
		return f(x)
	}
	if sa, sb := side(a), side(b); sa != sb {
		return sa + " -> " + sb
	}
	return side(a)
}

// writeDiffExamples prints the examples of every state as JSON lines under
// a heading per state and kind.
func writeDiffExamples(w io.Writer, rep *diff.Report) error {
	type named struct {
		title    string
		examples *diff.Examples
	}
	var all []named
	for _, s := range rep.States {
		all = append(all, named{s.Operator + "/" + s.Name, s.Examples})
	}
	for _, s := range rep.OperatorStates {
		all = append(all, named{s.Operator + "/" + s.Name, s.Examples})
	}
	for _, n := range all {
		if n.examples == nil {
			continue
		}
		for _, k := range []struct {
			what string
			l    []diff.Example
		}{{"only in A", n.examples.OnlyA}, {"only in B", n.examples.OnlyB}, {"changed", n.examples.Changed}, {"unchanged", n.examples.Unchanged}} {
			if len(k.l) == 0 {
				continue
			}
			fmt.Fprintf(w, "\n%s, %s:\n", n.title, k.what)
			for _, e := range k.l {
				b, err := json.Marshal(e)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "  %s\n", b)
			}
		}
	}
	return nil
}
