package export

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/storage"
)

// TestFlinkDirectMatchesDecoded decodes the keys, namespaces, map keys and
// values of every keyed state of Flink's reference savepoints both ways,
// straight into the builders and through typeser's Go values, and wants
// the same arrays.
func TestFlinkDirectMatchesDecoded(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "shared", "flink-savepoints")
	inv, err := os.ReadFile(filepath.Join(root, "inventory.tsv"))
	if err != nil {
		t.Skipf("Flink savepoints not found at %s: %v", root, err)
	}
	ctx := context.Background()
	var columns, values int
	for i, line := range strings.Split(strings.TrimSpace(string(inv)), "\n") {
		if i == 0 {
			continue
		}
		dir := strings.TrimSuffix(strings.SplitN(line, "\t", 2)[0], "/_metadata")
		src, err := flinksource.Open(ctx, storage.LocalDir(filepath.Join(root, dir)), flinkfmt.Options{})
		if err != nil {
			continue
		}
		m := src.Metadata()
		for op := range m.Operators {
			for _, ref := range m.Refs(op) {
				ks := m.KeyedState(ref)
				if ks == nil {
					continue
				}
				parts := []struct {
					name string
					snap serializers.Snapshot
					of   func(key, ns, mapKey, value []byte) []byte
				}{
					{"key", m.Operators[op].Key, func(k, _, _, _ []byte) []byte { return k }},
					{"namespace", ks.Namespace, func(_, n, _, _ []byte) []byte { return n }},
					{"map_key", ks.MapKey, func(_, _, mk, _ []byte) []byte { return mk }},
					{"value", ks.Value, func(_, _, _, v []byte) []byte { return v }},
				}
				for _, p := range parts {
					if p.snap.External == nil || p.name == "map_key" && ks.MapKey.External == nil {
						continue
					}
					col, err := externalColumn(p.snap, p.name)
					if err != nil {
						continue
					}
					fs := p.snap.External.(flinkSerializer)
					got, want := array.NewBuilder(memAlloc, col.typ), array.NewBuilder(memAlloc, col.typ)
					dd := directDecoder(fs, valueColumnOf(t, fs), p.name, got)
					if dd == nil {
						continue
					}
					gen := flinkDec{ser: fs, app: valueColumnOf(t, fs).bind(want)}
					it := src.Entries(ctx, ref, keygroup.All(m.Operators[op].MaxParallelism))
					ok := true
					for it.Next() {
						e := it.Entry()
						b := p.of(e.Key, e.Namespace, e.MapKey, e.Value)
						derr, gerr := dd.decode(b), gen.decode(b)
						if (derr == nil) != (gerr == nil) {
							t.Errorf("%s: %s %s: direct %v, decoded %v", dir, ks.Name, p.name, derr, gerr)
						}
						if derr != nil || gerr != nil {
							ok = false
							break
						}
						values++
					}
					it.Close()
					a, b := got.NewArray(), want.NewArray()
					if ok && !array.Equal(a, b) {
						t.Errorf("%s: %s %s: direct %v, decoded %v", dir, ks.Name, p.name, a, b)
					}
					a.Release()
					b.Release()
					columns++
				}
			}
		}
	}
	if columns == 0 || values == 0 {
		t.Fatalf("%d columns decoded directly, %d values", columns, values)
	}
	t.Logf("%d columns, %d values compared", columns, values)
}

func valueColumnOf(t *testing.T, fs flinkSerializer) valueColumn {
	t.Helper()
	vc, err := flinkColumn(fs.FlinkType(), "value", 0)
	if err != nil {
		t.Fatal(err)
	}
	return vc
}
