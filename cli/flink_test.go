package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/cli"
)

// flinkRoot is where Apache Flink's own savepoints lie, beside the module
// root; the test skips without them.
func flinkRoot(t testing.TB) string {
	t.Helper()
	root := filepath.Join("..", "..", "shared", "flink-savepoints")
	if _, err := os.Stat(filepath.Join(root, "inventory.tsv")); err != nil {
		t.Skipf("the Flink savepoints are not there (../shared/flink-savepoints from the module root): %v", err)
	}
	return root
}

// flinkFixture is one line of inventory.tsv.
type flinkFixture struct {
	dir, version, backend string
}

func flinkFixtures(t testing.TB) (string, []flinkFixture) {
	root := flinkRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "inventory.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var out []flinkFixture
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) < 6 {
			continue
		}
		out = append(out, flinkFixture{dir: filepath.Join(root, strings.TrimSuffix(f[0], "/_metadata")), version: f[2], backend: f[4]})
	}
	return root, out
}

// inProcess runs the command and returns its exit code and output.
func inProcess(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// flinkLayouts reads the keyed layouts from the layout inspect prints:
// the details after the releases, less compression and the format.
func flinkLayouts(layout string) string {
	_, details, _ := strings.Cut(layout, "), ")
	var ls []string
	for _, d := range strings.Split(details, ", ") {
		if d != "" && d != "snappy" && !strings.HasSuffix(d, " format") {
			ls = append(ls, d)
		}
	}
	if len(ls) == 0 {
		return "no keyed state"
	}
	return strings.Join(ls, " + ")
}

var refusedLayout = regexp.MustCompile(`in the (\w[\w ]*?) layout`)

// TestFlinkFixtures runs inspect, verify --deep and export on every
// Apache Flink savepoint and checkpoint of ../shared/flink-savepoints, as
// a user would, and tabulates what they read by metadata version, backend
// (from the fixture's name) and keyed layout: read completely, read with
// some values opaque (by class), or refused (by layout). The table is the
// README's, which the test keeps true (-update rewrites it). No command
// may exit with anything but 0, or 4 for a layout that is not read; every
// canonical, heap and native RocksDB fixture is read. Each is converted
// too: a native RocksDB or heap fixture into a canonical savepoint that
// verify --deep reads with the same number of entries, a canonical one
// refused as having nothing to convert, a changelog one refused by layout.
func TestFlinkFixtures(t *testing.T) {
	_, fixtures := flinkFixtures(t)
	type cell struct {
		fixtures, complete, opaque, refused int
		opaqueBy, refusedBy                 map[string]int
		// converted: convert wrote a canonical savepoint that verifies
		// with the input's entries; canonical: nothing to convert.
		converted, canonical int
	}
	table := map[[3]string]*cell{}
	out := t.TempDir()
	var entries uint64
	for i, f := range fixtures {
		name := filepath.Base(f.dir)
		code, stdout, stderr := inProcess("inspect", "-o", "json", f.dir)
		if code != cli.ExitOK {
			t.Errorf("%s: inspect: exit %d: %s", name, code, stderr)
			continue
		}
		var rep struct {
			Savepoint struct{ Layout string }
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%s: inspect: %v", name, err)
		}
		backend := f.backend
		if backend == "" {
			backend = "–"
		}
		id := [3]string{f.version, backend, flinkLayouts(rep.Savepoint.Layout)}
		c := table[id]
		if c == nil {
			c = &cell{opaqueBy: map[string]int{}, refusedBy: map[string]int{}}
			table[id] = c
		}
		c.fixtures++
		code, stdout, stderr = inProcess("verify", "--deep", "-o", "json", f.dir)
		exportDir := filepath.Join(out, fmt.Sprint(i))
		exportCode, _, exportErr := inProcess("export", f.dir, "--out", exportDir)
		switch code {
		case cli.ExitBadInput:
			m := refusedLayout.FindStringSubmatch(stderr)
			if m == nil || !strings.Contains(stderr, "not readable yet") {
				t.Errorf("%s: verify: exit 4 without naming a layout that is not read: %s", name, stderr)
				continue
			}
			c.refused++
			c.refusedBy[m[1]+" layout"]++
			if exportCode != cli.ExitBadInput {
				t.Errorf("%s: verify refuses it, export exits %d: %s", name, exportCode, exportErr)
			}
			convertDir := filepath.Join(out, fmt.Sprint(i)+"-converted")
			if code, _, stderr := inProcess("convert", f.dir, "--out", convertDir); code != cli.ExitUsage || !strings.Contains(stderr, m[1]) {
				t.Errorf("%s: verify refuses it, convert exits %d: %s", name, code, stderr)
			}
			continue
		case cli.ExitOK:
		default:
			t.Errorf("%s: verify --deep: exit %d: %s", name, code, stderr)
			continue
		}
		if exportCode != cli.ExitOK {
			t.Errorf("%s: export: exit %d: %s", name, exportCode, exportErr)
		}
		var v struct {
			Entries  uint64
			Warnings []struct{ Class, Serializer string }
			Opaque   []struct{ Class string }
		}
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatalf("%s: verify: %v", name, err)
		}
		entries += v.Entries
		convertDir := filepath.Join(out, fmt.Sprint(i)+"-converted")
		switch code, _, stderr := inProcess("convert", f.dir, "--out", convertDir); {
		case code == cli.ExitUsage && strings.Contains(stderr, "canonical already"):
			c.canonical++
		case code != cli.ExitOK:
			t.Errorf("%s: convert: exit %d: %s", name, code, stderr)
		default:
			code, stdout, stderr := inProcess("verify", "--deep", "-o", "json", convertDir)
			var cv struct {
				Layout  string
				Entries uint64
			}
			if code == cli.ExitOK {
				if err := json.Unmarshal([]byte(stdout), &cv); err != nil {
					t.Fatalf("%s: verify of the converted savepoint: %v", name, err)
				}
			}
			switch {
			case code != cli.ExitOK:
				t.Errorf("%s: verify of the converted savepoint: exit %d: %s", name, code, stderr)
			case cv.Entries != v.Entries || strings.Contains(cv.Layout, "native RocksDB") || strings.Contains(cv.Layout, "heap"):
				t.Errorf("%s: converted: %d entries in %s, want %d in the canonical layout", name, cv.Entries, cv.Layout, v.Entries)
			default:
				c.converted++
			}
		}
		classes := map[string]bool{}
		for _, o := range v.Opaque {
			classes[o.Class] = true
		}
		for _, w := range v.Warnings {
			classes[w.Class+", unframed"] = true
		}
		if len(classes) == 0 {
			c.complete++
			continue
		}
		c.opaque++
		for cl := range classes {
			c.opaqueBy[cl]++
		}
	}
	var ids [][3]string
	for id := range table {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return slices.Compare(ids[i][:], ids[j][:]) < 0 })
	var b strings.Builder
	b.WriteString("| metadata version | backend | keyed layout | fixtures | read completely | some values opaque | refused | convert |\n|---|---|---|---|---|---|---|---|\n")
	var sum [5]int
	for _, id := range ids {
		c := table[id]
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %s | %s | %s |\n", id[0], id[1], id[2], c.fixtures, c.complete, withCounts(c.opaque, c.opaqueBy), withCounts(c.refused, c.refusedBy),
			convertCell(c.converted, c.canonical, c.refused))
		sum[0] += c.fixtures
		sum[1] += c.complete
		sum[2] += c.opaque
		sum[3] += c.refused
		sum[4] += c.converted
		if c.refused > 0 && !strings.Contains(id[2], "changelog") {
			t.Errorf("version %s %s %s: %d fixtures refused", id[0], id[1], id[2], c.refused)
		}
	}
	fmt.Fprintf(&b, "| **total** | | | **%d** | **%d** | **%d** | **%d** | **%d converted** |\n", sum[0], sum[1], sum[2], sum[3], sum[4])
	t.Logf("%d fixtures, %d keyed entries verified:\n%s", len(fixtures), entries, b.String())
	keepREADMETable(t, b.String())
}

// convertCell says what convert did with a row's fixtures.
func convertCell(converted, canonical, refused int) string {
	var parts []string
	if converted > 0 {
		parts = append(parts, fmt.Sprintf("%d converted", converted))
	}
	if canonical > 0 {
		parts = append(parts, fmt.Sprintf("%d canonical already", canonical))
	}
	if refused > 0 {
		parts = append(parts, fmt.Sprintf("%d refused", refused))
	}
	return strings.Join(parts, ", ")
}

// withCounts writes a count with what it counts: 6 (RuntimeException ×6).
func withCounts(n int, by map[string]int) string {
	if n == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(mapsKeys(by)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, by[k]))
	}
	return fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
}

func mapsKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The README's table of Flink fixtures lies between these lines.
const (
	tableStart = "<!-- The table of Flink fixtures: TestFlinkFixtures in cli/flink_test.go computes it. -->\n"
	tableEnd   = "<!-- End of the table of Flink fixtures. -->\n"
)

func keepREADMETable(t *testing.T, table string) {
	readme := filepath.Join("..", "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(b), tableStart)
	_, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok || !ok2 {
		t.Fatalf("README.md has no table of Flink fixtures between %q and %q", tableStart, tableEnd)
	}
	want := before + tableStart + table + tableEnd + after
	if *update {
		if err := os.WriteFile(readme, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != string(b) {
		t.Errorf("README.md's table of Flink fixtures is not what the commands read; run go test ./cli -run TestFlinkFixtures -update. It is:\n%s", table)
	}
}
