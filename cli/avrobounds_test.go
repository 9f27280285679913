package cli_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
)

// avroSavepoint writes a savepoint of one keyed value state whose values
// have the Avro schema, with one entry of each value.
func avroSavepoint(t *testing.T, dir, schema string, values ...[]byte) {
	t.Helper()
	void := serializers.Snapshot{Kind: serializers.KindVoid}
	meta := &savepoint.Metadata{ID: 1, CreatedAt: demoNow, Operators: []savepoint.Operator{{
		UID: "op", Name: "Op", Parallelism: 1, MaxParallelism: 128,
		KeyHash: keygroup.Murmur3, Key: serializers.Snapshot{Kind: serializers.KindString},
		States: []savepoint.KeyedState{{Name: "v", Kind: savepoint.Value, Namespace: void,
			Value: serializers.Snapshot{Kind: serializers.KindAvro, Schema: schema}}},
	}}}
	var entries []savepoint.Entry
	for i, v := range values {
		entries = append(entries, savepoint.Entry{Key: fmt.Appendf(nil, "k%d", i), Value: v})
	}
	if err := sptest.Write(dir, meta, map[savepoint.StateRef][]savepoint.Entry{{}: entries}, snapshotfmt.Options{}); err != nil {
		t.Fatal(err)
	}
}

// patchMetadata replaces old by new, of the same length, in the savepoint's
// metadata and writes its checksum anew: a savepoint that the writer would
// refuse, with a valid CRC, as a hostile one would come.
func patchMetadata(t *testing.T, dir, old, new string) {
	t.Helper()
	if len(old) != len(new) {
		t.Fatalf("patch of %d bytes by %d", len(old), len(new))
	}
	name := filepath.Join(dir, snapshotfmt.MetadataName)
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte(old))
	if at < 0 {
		t.Fatalf("no %q in the metadata", old)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	// The checksum at the end covers what follows the preamble.
	body := -1
	for p := 0; p < 64 && p < at; p++ {
		if crc32.Checksum(b[p:len(b)-4], castagnoli) == binary.BigEndian.Uint32(b[len(b)-4:]) {
			body = p
			break
		}
	}
	if body < 0 {
		t.Fatal("cannot find what the metadata's checksum covers")
	}
	copy(b[at:], new)
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[body:len(b)-4], castagnoli))
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs a command in process and returns its exit code, its stderr and
// the bytes it allocated.
func run(t *testing.T, args ...string) (int, string, uint64) {
	t.Helper()
	var stderr bytes.Buffer
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code := cli.Main(context.Background(), args, &bytes.Buffer{}, &stderr)
	runtime.ReadMemStats(&after)
	return code, stderr.String(), after.TotalAlloc - before.TotalAlloc
}

// schemaCommands are the commands that read a state's schema, each as
// arguments for the savepoint sp.
func schemaCommands(sp, out string) [][]string {
	return [][]string{
		{"inspect", sp},
		{"inspect", "--scan", sp},
		{"verify", "--deep", sp},
		{"dump", sp, "--operator", "op", "--state", "v"},
		{"export", sp, "--out", out},
		{"size", sp},
	}
}

// A fixed's size is a schema's word: readers size buffers from it before
// reading any value. A 1 TiB fixed once made export run out of memory; now
// every command refuses the savepoint as corrupt, at once.
func TestHugeFixedIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "sp")
	const placeholder = `{"type":"fixed","name":"FFFFFFFFFFFF","size":16}`
	const hostile = `{"type":"fixed","name":"F","size":1099511627776}`
	avroSavepoint(t, sp, placeholder, make([]byte, 16))
	patchMetadata(t, sp, placeholder, hostile)
	for i, args := range schemaCommands(sp, filepath.Join(dir, fmt.Sprint("out", 0))) {
		args[len(args)-1] = strings.Replace(args[len(args)-1], "out0", fmt.Sprint("out", i), 1)
		code, stderr, alloc := run(t, args...)
		if code != 4 || !strings.Contains(stderr, "fixed F has size 1099511627776, more than the 1048576 bytes a fixed may have") {
			t.Errorf("%s: exit %d: %s", args[0], code, stderr)
		}
		if alloc > 64<<20 {
			t.Errorf("%s: allocated %d MiB", args[0], alloc>>20)
		}
	}
}

func nestedArrays(n int) string {
	return strings.Repeat(`{"type":"array","items":`, n) + `"int"` + strings.Repeat("}", n)
}

// nestedValue is a datum of nestedArrays(n) whose innermost array holds
// one int: each level an array of one item.
func nestedValue(n int) []byte {
	b := bytes.Repeat([]byte{0x02}, n)
	b = append(b, 0x54) // 42
	return append(b, bytes.Repeat([]byte{0x00}, n)...)
}

// Export once ignored the Avro nesting limit, with memory quadratic in the
// depth: 1001 nested arrays exited 0 at 121 MiB, 9990 ran for minutes at
// gigabytes. The bound is now the schema's, for every command.
func TestDeepSchemaIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, schema, msg string
	}{
		{"arrays", nestedArrays(1001), "schema nests 1001 levels deep, more than the 1000 allowed"},
		{"arrays far too deep", nestedArrays(9990), "schema's JSON nests deeper than 4000 levels"},
		// Once `json: ... exceeded max depth`, exit 1.
		{"unions", strings.Repeat(`["null",{"type":"map","values":`, 6000) + `"int"` + strings.Repeat("}]", 6000), "schema's JSON nests deeper than 4000 levels"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := filepath.Join(dir, c.name)
			// The writer refuses the schema: write a placeholder of its
			// length, then put it in.
			placeholder := `{"type":"fixed","name":"F` + strings.Repeat("F", len(c.schema)-len(`{"type":"fixed","name":"F","size":1}`)) + `","size":1}`
			avroSavepoint(t, sp, placeholder, []byte{0})
			patchMetadata(t, sp, placeholder, c.schema)
			for _, args := range schemaCommands(sp, filepath.Join(dir, c.name+"-out")) {
				code, stderr, alloc := run(t, args...)
				if code != 4 || !strings.Contains(stderr, c.msg) {
					t.Errorf("%s: exit %d: %s", args[0], code, stderr)
				}
				if alloc > 64<<20 {
					t.Errorf("%s: allocated %d MiB", args[0], alloc>>20)
				}
			}
		})
	}
}

// At the bound, export works and its memory stays moderate.
func TestExportAtTheNestingBound(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "sp")
	avroSavepoint(t, sp, nestedArrays(1000), nestedValue(1000), nestedValue(1000))
	code, stderr, alloc := run(t, "export", sp, "--out", filepath.Join(dir, "out"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("export of 1000 nested arrays allocated %d MiB", alloc>>20)
	if alloc > 512<<20 {
		t.Errorf("export of 1000 nested arrays allocated %d MiB", alloc>>20)
	}
	if code, stderr, _ := run(t, "verify", "--deep", sp); code != 0 {
		t.Fatalf("verify --deep: exit %d: %s", code, stderr)
	}
}

// Fixed values of the largest size export row groups of bounded memory:
// the up-front room of a batch is capped by their width.
func TestExportLargestFixed(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "sp")
	v := bytes.Repeat([]byte{7}, 1<<20)
	avroSavepoint(t, sp, `{"type":"fixed","name":"F","size":1048576}`, v, v, v)
	code, stderr, alloc := run(t, "export", sp, "--out", filepath.Join(dir, "out"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("export of three 1 MiB fixed values allocated %d MiB", alloc>>20)
	if alloc > 512<<20 {
		t.Errorf("export of three 1 MiB fixed values allocated %d MiB", alloc>>20)
	}
}
