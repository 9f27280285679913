package cli

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/storage"
)

// pathMapKey holds --path-map in a command's context, where openSavepoint
// finds it whichever command opens the savepoint.
type pathMapKey struct{}

func pathMapOf(ctx context.Context) map[string]string {
	m, _ := ctx.Value(pathMapKey{}).(map[string]string)
	return m
}

// addPathMapFlag adds --path-map, which every command that reads a
// savepoint takes, to the root.
func addPathMapFlag(root *cobra.Command, p *[]string) {
	root.PersistentFlags().StringArrayVar(p, "path-map", nil,
		"read the files an Apache Flink _metadata records under the absolute path `OLD=NEW` from NEW (a directory, relative to the savepoint's, or a location such as s3://bucket/prefix); repeatable")
}

// withPathMap parses --path-map into the context of cmd.
func withPathMap(cmd *cobra.Command, flags []string) error {
	if len(flags) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, f := range flags {
		old, repl, ok := strings.Cut(f, "=")
		if !ok || old == "" || repl == "" {
			return usagef("--path-map %q: want OLD=NEW, an absolute path recorded in the metadata and the directory that holds its files now", f)
		}
		if !absoluteRecorded(old) {
			return usagef("--path-map %q: %q is not an absolute path or URI, as the metadata records them", f, old)
		}
		if strings.Contains(repl, "://") {
			if _, err := storage.ParseLocation(repl); err != nil {
				return usagef("--path-map %q: %v", f, err)
			}
		}
		if _, dup := m[old]; dup {
			return usagef("--path-map gives %q twice", old)
		}
		m[old] = filepath.ToSlash(repl)
	}
	cmd.SetContext(context.WithValue(cmd.Context(), pathMapKey{}, m))
	return nil
}

// absoluteRecorded reports whether old can be a path that Flink's metadata
// records: an absolute path, or a URI with a scheme (file:/tmp/sp,
// s3://bucket/sp, hdfs://namenode/sp).
func absoluteRecorded(old string) bool {
	if strings.HasPrefix(old, "/") || filepath.IsAbs(old) {
		return true
	}
	scheme, rest, ok := strings.Cut(old, ":")
	if !ok || scheme == "" || !strings.HasPrefix(rest, "/") {
		return false
	}
	for i, c := range scheme {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}
