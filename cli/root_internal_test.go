package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// The table of commands names each command as the command names itself,
// and no command has an alias that the table would miss.
func TestSubcommandNames(t *testing.T) {
	for _, c := range subcommands() {
		cmd := c.build()
		if cmd.Name() != c.name || len(cmd.Aliases) > 0 {
			t.Errorf("the table names %q, the command %q with aliases %q", c.name, cmd.Name(), cmd.Aliases)
		}
	}
}

// Main builds only the command that runs, and the whole tree where
// cobra needs it; either way its output is the whole tree's.
func TestInvokedCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" for the whole tree
	}{
		{[]string{"inspect", "sp"}, "inspect"},
		{[]string{"operator", "remove", "--help"}, "operator"},
		{[]string{"--cpuprofile", "inspect", "dump", "sp"}, "dump"},
		{[]string{"--cpuprofile=p", "verify", "sp"}, "verify"},
		{[]string{"-o", "json", "inspect", "sp"}, "inspect"},
		{[]string{"--scan", "inspect", "sp"}, ""},
		{[]string{"help", "inspect"}, ""},
		{[]string{"inspct", "sp"}, ""},
		{[]string{"--help"}, ""},
		{[]string{"--", "inspect"}, ""},
		{nil, ""},
	} {
		cmds := invoked(c.args)
		got := ""
		if len(cmds) == 1 {
			got = cmds[0].Name()
		} else if cmds != nil {
			t.Fatalf("%q: %d commands", c.args, len(cmds))
		}
		if got != c.want {
			t.Errorf("%q builds %q, want %q", c.args, got, c.want)
		}
	}
	var args [][]string
	for _, c := range subcommands() {
		args = append(args, []string{c.name, "--help"}, []string{c.name, "--bogus"}, []string{"--path-map", "a=b", c.name, "-h"})
	}
	args = append(args, []string{"operator", "rename", "--help"}, []string{"operator", "nothing"}, []string{"inspect"},
		[]string{"--version"}, []string{"nonesuch"}, []string{"help", "size"}, []string{"--scan", "inspect", "x"})
	for _, a := range args {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), a, &out, &errOut)
		root := NewRoot()
		var wantOut, wantErr bytes.Buffer
		root.SetArgs(a)
		root.SetOut(&wantOut)
		root.SetErr(&wantErr)
		err := root.Execute()
		if out.String() != wantOut.String() {
			t.Errorf("%q: stdout differs from the whole tree's:\n%s\nwant:\n%s", a, out.String(), wantOut.String())
		}
		if err != nil && !strings.Contains(errOut.String(), err.Error()) {
			t.Errorf("%q: exit %d, stderr %q, the whole tree's error %q", a, code, errOut.String(), err)
		}
	}
}

// BenchmarkCommandTree builds the tree that Main builds to run one
// command, against the whole tree that it once built for every command.
func BenchmarkCommandTree(b *testing.B) {
	args := []string{"inspect", "sp"}
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			newRoot(new(cpuProfile), nil).Find(args)
		}
	})
	b.Run("invoked", func(b *testing.B) {
		for b.Loop() {
			newRoot(new(cpuProfile), invoked(args)).Find(args)
		}
	})
}

// A savepoint that changed while it was read is not damaged, even where a
// reader took what it found for damage: the command is to be run again
// (exit 1), with a hint that says so.
func TestChangedInputIsNoBadInput(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("sp: %w: sp was replaced or removed before its data-000 was opened", storage.ErrChanged),
		fmt.Errorf("%w: %w", savepoint.ErrCorrupt, storage.ErrChanged),
	} {
		if got := ExitCode(err); got != ExitFailure {
			t.Errorf("ExitCode(%v) = %d, want %d", err, got, ExitFailure)
		}
		if h := hint(err); !strings.Contains(h, "run the command again") {
			t.Errorf("hint(%v) = %q, want one that says to run again", err, h)
		}
	}
}
