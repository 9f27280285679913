package layering

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/stateproc/stateproc"

// The layers in import order: a package may import its own layer and the
// ones before it. Programs (examples, benchmarks, generators) may import
// any layer but the CLI, which only commands (package main) embed.
var layers = []string{"format", "engine", "tools", "cli"}

const programs = "programs"

// readLayers reads the README's layout table: rows of layer, packages in
// backquotes (dir/... for every package below dir), and what they are for.
func readLayers(t *testing.T, root string, pkgs []string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	quoted := regexp.MustCompile("`([^`]+)`")
	out := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		layer := strings.TrimSpace(cells[1])
		if !slices.Contains(layers, layer) && layer != programs {
			continue
		}
		for _, m := range quoted.FindAllStringSubmatch(cells[2], -1) {
			name := m[1]
			if dir, ok := strings.CutSuffix(name, "/..."); ok {
				for _, p := range pkgs {
					if p == dir || strings.HasPrefix(p, dir+"/") {
						out[p] = layer
					}
				}
				continue
			}
			if !slices.Contains(pkgs, name) {
				t.Errorf("README layout table names %s, which is no package of the module", name)
			}
			out[name] = layer
		}
	}
	return out
}

// pkgImports holds, per package directory relative to the module root, the
// module packages its files import, apart (test files) and not.
type pkgImports struct {
	code, tests map[string]bool
	// main says the package is a command.
	main bool
}

func scan(t *testing.T, root string) map[string]*pkgImports {
	t.Helper()
	out := map[string]*pkgImports{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		p := out[rel]
		if p == nil {
			p = &pkgImports{code: map[string]bool{}, tests: map[string]bool{}}
			out[rel] = p
		}
		into := p.code
		if strings.HasSuffix(path, "_test.go") {
			into = p.tests
		} else if f.Name.Name == "main" {
			p.main = true
		}
		for _, imp := range f.Imports {
			ip, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if dep, ok := strings.CutPrefix(ip, module+"/"); ok {
				into[dep] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func rank(layer string) int { return slices.Index(layers, layer) }

func TestLayersHoldAgainstImports(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	imports := scan(t, root)
	var pkgs []string
	for p := range imports {
		if p != "." && hasCode(t, filepath.Join(root, p)) {
			pkgs = append(pkgs, p)
		}
	}
	slices.Sort(pkgs)
	layerOf := readLayers(t, root, pkgs)
	for _, p := range pkgs {
		if _, ok := layerOf[p]; !ok {
			t.Errorf("package %s is not in the README's layout table", p)
		}
	}
	for _, problem := range check(layerOf, imports) {
		t.Error(problem)
	}
}

// TestCheckFindsViolations feeds check the imports that the rules forbid.
func TestCheckFindsViolations(t *testing.T) {
	layerOf := map[string]string{"savepoint": "format", "snapshotfmt": "format", "engine": "engine", "export": "tools",
		"rewrite": "tools", "cli": "cli", "cmd/stateproc": "cli", "examples/job": programs, "bench/run": programs}
	imp := func(code, tests []string) *pkgImports {
		p := &pkgImports{code: map[string]bool{}, tests: map[string]bool{}}
		for _, d := range code {
			p.code[d] = true
		}
		for _, d := range tests {
			p.tests[d] = true
		}
		return p
	}
	for _, tc := range []struct {
		pkg         string
		code, tests []string
		want        string
	}{
		{"savepoint", []string{"export"}, nil, "a later layer"},
		{"engine", []string{"export"}, nil, "a later layer"},
		{"engine", nil, []string{"cli"}, "imports cli"},
		{"export", []string{"snapshotfmt"}, nil, "imports snapshotfmt"},
		{"export", []string{"cli"}, nil, "a later layer"},
		{"examples/job", []string{"cli"}, nil, "imports cli"},
		{"export", nil, []string{"cli"}, "imports cli"},
		{"engine", []string{"examples/job"}, nil, "a program"},
	} {
		got := check(layerOf, map[string]*pkgImports{tc.pkg: imp(tc.code, tc.tests)})
		if len(got) != 1 || !strings.Contains(got[0], tc.want) {
			t.Errorf("%s importing %v, tests %v: %q, want one problem saying %q", tc.pkg, tc.code, tc.tests, got, tc.want)
		}
	}
	ok := map[string]*pkgImports{
		"engine":        imp([]string{"savepoint", "snapshotfmt"}, nil),
		"rewrite":       imp([]string{"snapshotfmt", "engine"}, nil),
		"cmd/stateproc": imp([]string{"cli"}, nil),
		"cli":           imp([]string{"export", "rewrite"}, []string{"cli"}),
		"examples/job":  imp([]string{"engine", "export"}, nil),
		"bench/run":     {code: map[string]bool{"cli": true, "examples/job": true}, main: true},
	}
	if got := check(layerOf, ok); len(got) > 0 {
		t.Errorf("allowed imports refused: %q", got)
	}
}

// check returns every import that breaks a rule of the layers.
func check(layerOf map[string]string, imports map[string]*pkgImports) []string {
	var problems []string
	for _, p := range slices.Sorted(maps.Keys(imports)) {
		layer, ok := layerOf[p]
		if !ok {
			continue
		}
		for _, dep := range slices.Sorted(maps.Keys(imports[p].code)) {
			dl, ok := layerOf[dep]
			switch {
			case !ok:
			case dl == programs && layer != programs:
				problems = append(problems, fmt.Sprintf("%s (%s) imports %s, a program", p, layer, dep))
			case layer == programs && dl == "cli" && !imports[p].main:
				problems = append(problems, fmt.Sprintf("the program %s imports cli: only commands do", p))
			case layer != programs && rank(dl) > rank(layer):
				problems = append(problems, fmt.Sprintf("%s (%s) imports %s (%s), a later layer", p, layer, dep, dl))
			case layer == "tools" && dep == "snapshotfmt" && p != "rewrite" && p != "layouts":
				problems = append(problems, fmt.Sprintf("the tool %s imports snapshotfmt: tools read through savepoint.Source and write through rewrite", p))
			}
		}
		for dep := range imports[p].tests {
			if dep == "cli" && layerOf[p] != "cli" {
				problems = append(problems, fmt.Sprintf("a test of %s imports cli: nothing but the command does", p))
			}
		}
	}
	return problems
}

// hasCode reports whether dir holds a Go file that is not a test.
func hasCode(t *testing.T, dir string) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}
