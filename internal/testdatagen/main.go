package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/stateproc/stateproc/engine"
	"github.com/stateproc/stateproc/snapshotfmt"
)

func main() {
	out := flag.String("out", "", "directory to write the savepoints into (default: testdata/savepoints/v<N> of the module)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintf(os.Stderr, "testdatagen: %v\n", err)
		os.Exit(1)
	}
}

func run(out string) error {
	if out == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		out = defaultDir(root)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".testdatagen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := generateAll(context.Background(), tmp, os.Stderr); err != nil {
		return err
	}
	return replace(tmp, out)
}

// defaultDir is where the savepoints of the current format version live.
func defaultDir(root string) string {
	return filepath.Join(root, "testdata", "savepoints", fmt.Sprintf("v%d", snapshotfmt.NewestVersion))
}

// moduleRoot finds the directory of go.mod from the working directory up,
// so that the command works from the module root and from go generate.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in the working directory or above it")
		}
		dir = parent
	}
}

// generateAll writes every fixture into dir, one subdirectory each, and
// says on log what each is.
func generateAll(ctx context.Context, dir string, log io.Writer) error {
	for _, f := range fixtures {
		target := filepath.Join(dir, f.name)
		if err := generate(ctx, f, target); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		size, err := dirSize(target)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "%s: %d bytes: %s\n", f.name, size, f.why)
	}
	return nil
}

func dirSize(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var size int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return 0, err
		}
		size += info.Size()
	}
	return size, nil
}

func generate(ctx context.Context, f fixture, target string) error {
	j, total, err := f.job()
	if err != nil {
		return err
	}
	opts := engine.RunOptions{
		Backend:        f.backend,
		ProcessingTime: engine.DeterministicTime,
		StopAfter:      max(1, int64(math.Round(float64(total)*f.stopAt))),
		Drain:          f.drain,
		SavepointDir:   target,
		Compression:    f.compression,
	}
	_, err = engine.Run(ctx, j, opts)
	return err
}

// replace puts each freshly generated savepoint of dir in place of its
// namesake in out, moving the old one aside first so that out never holds a
// mix of both. Other directories in out are left alone: they are not this
// command's.
func replace(dir, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	old := filepath.Join(dir, ".old")
	if err := os.Mkdir(old, 0o755); err != nil {
		return err
	}
	for _, f := range fixtures {
		target := filepath.Join(out, f.name)
		if err := os.Rename(target, filepath.Join(old, f.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := os.Rename(filepath.Join(dir, f.name), target); err != nil {
			return err
		}
	}
	return nil
}
