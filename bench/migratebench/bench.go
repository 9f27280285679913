package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/stateproc/stateproc/bench/internal/measure"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// childCommand is the first argument of the child process that runs
// stateproc migrate.
const childCommand = "stateproc"

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migratebench", flag.ContinueOnError)
	sp := fs.String("savepoint", "", "the savepoint to migrate (required)")
	job := fs.String("job", "", "the manifest of the job to migrate to (required)")
	name := fs.String("state", "assemble/open", "the `UID/STATE` whose values the hamba loop migrates")
	runs := fs.Int("runs", 5, "runs of each side")
	work := fs.String("work", "", "directory for the migrated savepoints (default: a temporary directory beside -savepoint, removed at the end)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sp == "" || *job == "" || *runs < 1 {
		return errors.New("-savepoint and -job are required and -runs must be at least 1")
	}
	if *work == "" {
		// Beside the savepoint: the migration writes where it reads, as it
		// would in production.
		dir, err := os.MkdirTemp(filepath.Dir(filepath.Clean(*sp)), "migratebench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*work = dir
	}
	m, err := readManifest(*job)
	if err != nil {
		return err
	}
	in, err := loadValues(ctx, *sp, m, *name)
	if err != nil {
		return err
	}
	loop, err := newHambaLoop(in)
	if err != nil {
		return err
	}
	if err := loop.agrees(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d values of %s, %s, held in memory; hamba agrees with stateproc on every one\n", len(in.values), *name, sizeString(in.bytes))

	migrateOnce := func(i int) (measure.Usage, error) {
		out := filepath.Join(*work, fmt.Sprintf("out-%d", i))
		defer os.RemoveAll(out)
		return migrateChild(ctx, *sp, *job, out)
	}
	if _, err := migrateOnce(-1); err != nil { // warm-up
		return err
	}
	loop.run()
	var ours, theirs []measure.Usage
	for i := range *runs {
		s, err := migrateOnce(i)
		if err != nil {
			return err
		}
		ours = append(ours, s)
		theirs = append(theirs, loop.run())
		fmt.Fprintf(os.Stderr, "run %d: migrate %v, hamba loop %v\n", i+1, s.Wall.Round(time.Millisecond), theirs[i].Wall.Round(time.Millisecond))
	}
	report(*sp, len(in.values), ours, theirs)
	return nil
}

// migrateChild runs stateproc migrate in a child process of this program.
func migrateChild(ctx context.Context, sp, job, out string) (measure.Usage, error) {
	self, err := os.Executable()
	if err != nil {
		return measure.Usage{}, err
	}
	rss := out + ".rss"
	defer os.Remove(rss)
	cmd := exec.CommandContext(ctx, self, childCommand, "migrate", sp, "--job", job, "--out", out, "-o", "json")
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	u, err := measure.Child(cmd, rss)
	if err != nil {
		return measure.Usage{}, fmt.Errorf("stateproc migrate: %w", err)
	}
	return u, nil
}

func readManifest(path string) (savepoint.Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return savepoint.Manifest{}, err
	}
	defer f.Close()
	return savepoint.ReadManifest(f)
}

// input is the state's values, as stored, and its writer and reader
// schemas.
type input struct {
	values         [][]byte
	bytes          int64
	ttl            bool
	writer, reader string
}

func loadValues(ctx context.Context, dir string, m savepoint.Manifest, name string) (*input, error) {
	uid, stateName, _ := strings.Cut(name, "/")
	r, err := snapshotfmt.Open(ctx, storage.LocalDir(dir))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	meta := r.Metadata()
	op := slices.IndexFunc(meta.Operators, func(o savepoint.Operator) bool { return o.UID == uid })
	if op < 0 {
		return nil, fmt.Errorf("no operator %q in %s", uid, dir)
	}
	ref := slices.IndexFunc(meta.Operators[op].States, func(s savepoint.KeyedState) bool { return s.Name == stateName })
	if ref < 0 {
		return nil, fmt.Errorf("no state %q in operator %q", stateName, uid)
	}
	saved := &meta.Operators[op].States[ref]
	ops, err := m.Model()
	if err != nil {
		return nil, err
	}
	var declared *savepoint.KeyedState
	for i := range ops {
		if ops[i].UID == uid {
			declared, _ = ops[i].State(stateName)
		}
	}
	switch {
	case declared == nil:
		return nil, fmt.Errorf("the job has no state %s", name)
	case saved.Value.Schema == "" || declared.Value.Schema == "":
		return nil, fmt.Errorf("%s is not an Avro value in both", name)
	case (saved.TTL == nil) != (declared.TTL == nil):
		return nil, fmt.Errorf("%s turns TTL on or off; the hamba loop migrates Avro only", name)
	}
	in := &input{ttl: saved.TTL != nil, writer: saved.Value.Schema, reader: declared.Value.Schema}
	it := r.Entries(ctx, savepoint.StateRef{Operator: op, State: ref}, keygroup.All(meta.Operators[op].MaxParallelism))
	defer it.Close()
	for it.Next() {
		v := it.Entry().Value
		in.values = append(in.values, slices.Clone(v))
		in.bytes += int64(len(v))
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return in, nil
}

func report(sp string, values int, ours, theirs []measure.Usage) {
	median := func(ss []measure.Usage, f func(measure.Usage) float64) float64 {
		xs := make([]float64, len(ss))
		for i, s := range ss {
			xs[i] = f(s)
		}
		slices.Sort(xs)
		if n := len(xs); n%2 == 0 {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
		return xs[len(xs)/2]
	}
	wall := func(s measure.Usage) float64 { return s.Wall.Seconds() }
	cpu := func(s measure.Usage) float64 { return s.CPU.Seconds() }
	rss := func(s measure.Usage) float64 { return float64(s.PeakRSS) }
	ratios := make([]measure.Usage, len(ours))
	for i := range ours {
		ratios[i].Wall = time.Duration(float64(time.Second) * ours[i].Wall.Seconds() / theirs[i].Wall.Seconds())
	}
	fmt.Printf("savepoint %s: %d values; %d runs each, GOMAXPROCS %d\n", sp, values, len(ours), runtime.GOMAXPROCS(0))
	fmt.Printf("%-30s %10s %10s %14s %16s %12s\n", "", "wall (med)", "wall (min)", "CPU s (med)", "values/s/core", "peak RSS")
	for _, side := range []struct {
		name string
		ss   []measure.Usage
	}{{"stateproc migrate (savepoint)", ours}, {"hamba loop (in memory)", theirs}} {
		fmt.Printf("%-30s %9.3fs %9.3fs %13.3fs %16.0f %12s\n", side.name, median(side.ss, wall), slices.MinFunc(side.ss, func(a, b measure.Usage) int { return int(a.Wall - b.Wall) }).Wall.Seconds(),
			median(side.ss, cpu), float64(values)/median(side.ss, cpu), sizeString(int64(median(side.ss, rss))))
	}
	fmt.Printf("ratio migrate / hamba loop (median of per-run ratios): %.2f\n", median(ratios, wall))
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}
