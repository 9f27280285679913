package storage_test

import (
	"context"
	"iter"
	"maps"
	"os"
	"strings"
	"testing"
)

func mapsKeys[V any](m map[string]V) iter.Seq[string] { return maps.Keys(m) }

func cutSuffix(s, suffix string) (string, bool) { return strings.CutSuffix(s, suffix) }

func writeLocal(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// referencing is RemoveOrphans' referenced for a savepoint that names
// these files.
func referencing(names ...string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return names, nil }
}
