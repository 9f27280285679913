package cli

import (
	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/shard"
)

// shardFlag is --shard I/N: the command does shard I of N of its work, as
// one of N independent tasks (see package shard).
type shardFlag struct {
	value string
}

func addShardFlag(cmd *cobra.Command, f *shardFlag, writes string) {
	help := "do shard `I/N` of the work only (I from 0), as one of N independent tasks"
	if writes != "" {
		help += "; " + writes
	}
	cmd.Flags().StringVar(&f.value, "shard", "", help)
}

// spec parses the flag; no flag is the whole work.
func (f shardFlag) spec() (shard.Spec, error) {
	if f.value == "" {
		return shard.All, nil
	}
	s, err := shard.Parse(f.value)
	if err != nil {
		return s, usagef("--shard: %v", err)
	}
	return s, nil
}

func (f shardFlag) set() bool { return f.value != "" }
