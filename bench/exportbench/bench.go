package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/stateproc/stateproc/bench/internal/measure"
	"github.com/stateproc/stateproc/export"
)

// exportRun is one run of stateproc export in a child process.
type exportRun struct {
	measure.Usage
	summary export.Summary
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sp := fs.String("savepoint", "", "the savepoint to export (required)")
	work := fs.String("work", "", "directory for the outputs (default: a new temporary directory, removed at the end)")
	runs := fs.Int("runs", 3, "runs of each side")
	bin := fs.String("stateproc", "", "the stateproc binary to measure (default: built into -work from ./cmd/stateproc with -pgo=auto, as it ships)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sp == "" || *runs < 1 {
		return fmt.Errorf("run: -savepoint is required and -runs must be at least 1")
	}
	if *work == "" {
		dir, err := os.MkdirTemp("", "exportbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*work = dir
	}
	if *bin == "" {
		*bin = filepath.Join(*work, "stateproc")
		if err := buildStateproc(ctx, *bin, stderr); err != nil {
			return err
		}
	}
	// A first export, not counted, warms the page cache and gives DuckDB
	// its rows; then the two sides take turns, so that both see the same
	// machine.
	loaded := filepath.Join(*work, "loaded")
	if err := os.RemoveAll(loaded); err != nil {
		return err
	}
	first, err := exportOnce(ctx, *bin, *sp, loaded)
	if err != nil {
		return err
	}
	duck, err := loadDuck(ctx, loaded, &first.summary)
	if err != nil {
		return err
	}
	defer duck.db.Close()
	var ours []exportRun
	var copies, cpus []time.Duration
	for i := range *runs {
		out := filepath.Join(*work, "export")
		if err := os.RemoveAll(out); err != nil {
			return err
		}
		r, err := exportOnce(ctx, *bin, *sp, out)
		if err != nil {
			return err
		}
		ours = append(ours, r)
		wall, cpu, err := duck.copyAll(ctx, filepath.Join(*work, "duckdb"))
		if err != nil {
			return err
		}
		copies, cpus = append(copies, wall), append(cpus, cpu)
		fmt.Fprintf(stderr, "run %d: export %v, duckdb COPY %v\n", i+1, r.Wall.Round(time.Millisecond), wall.Round(time.Millisecond))
	}
	report(stdout, *sp, ours, copies, cpus, dirSize(filepath.Join(*work, "duckdb")))
	return nil
}

// buildStateproc builds the stateproc command as it ships, with the
// profile-guided optimization of its checked-in profile (-pgo=auto takes
// cmd/stateproc/default.pgo), from the module this program runs in.
func buildStateproc(ctx context.Context, bin string, stderr io.Writer) error {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	cmd := exec.CommandContext(ctx, "go", "build", "-pgo=auto", "-o", bin, "./cmd/stateproc")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building stateproc in %s: %w", root, err)
	}
	return nil
}

// exportOnce runs bin export in a grandchild process, under this
// program's child command, so that its peak RSS is its own: Linux counts
// in a child's the memory of its parent at the fork, and this process
// holds DuckDB's tables.
func exportOnce(ctx context.Context, bin, sp, out string) (exportRun, error) {
	self, err := os.Executable()
	if err != nil {
		return exportRun{}, err
	}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, self, "child", bin, "export", sp, "--out", out, "-o", "json")
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	u, err := measure.Child(cmd, out+".rss")
	if err != nil {
		return exportRun{}, fmt.Errorf("stateproc export: %w", err)
	}
	r := exportRun{Usage: u}
	if err := json.Unmarshal(stdout.Bytes(), &r.summary); err != nil {
		return exportRun{}, fmt.Errorf("stateproc export printed no summary: %w", err)
	}
	return r, nil
}

// runChild runs argv, the command that exportOnce measures, with this
// process's output, and writes the peak RSS it reached (its ru_maxrss,
// which counts this small process at the fork) for exportOnce's parent.
// It returns the command's exit code.
func runChild(ctx context.Context, argv []string) (int, error) {
	if len(argv) == 0 {
		return 0, fmt.Errorf("child: no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return 0, err
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if err := measure.WriteRSS(ru.Maxrss * 1024); err != nil {
		return 0, err
	}
	return cmd.ProcessState.ExitCode(), nil
}

// duckTables holds the exported rows in in-memory DuckDB tables, one per
// non-empty dataset: the same rows with the same column types.
type duckTables struct {
	db     *sql.DB
	tables []string
}

func loadDuck(ctx context.Context, exported string, s *export.Summary) (*duckTables, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	// One connection: each connection of the pool would open its own
	// in-memory database.
	db.SetMaxOpenConns(1)
	d := &duckTables{db: db}
	for i, ds := range s.Datasets {
		if ds.Rows == 0 {
			continue
		}
		t := fmt.Sprintf("t%d", i)
		glob := filepath.Join(exported, filepath.FromSlash(ds.Dir), "*.parquet")
		if _, err := db.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM read_parquet('%s')", t, glob)); err != nil {
			db.Close()
			return nil, fmt.Errorf("loading %s: %w", ds.Dir, err)
		}
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&n); err != nil {
			db.Close()
			return nil, err
		}
		if n != ds.Rows {
			db.Close()
			return nil, fmt.Errorf("%s: DuckDB loaded %d rows, the export wrote %d", ds.Dir, n, ds.Rows)
		}
		d.tables = append(d.tables, t)
	}
	return d, nil
}

// copyAll copies every table to a zstd Parquet file in dir, and returns
// the time the COPY statements took and the CPU time this process spent
// meanwhile: DuckDB's threads are this process's.
func (d *duckTables) copyAll(ctx context.Context, dir string) (wall, cpu time.Duration, err error) {
	if err := os.RemoveAll(dir); err != nil {
		return 0, 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	for _, t := range d.tables {
		stmt := fmt.Sprintf("COPY %s TO '%s' (FORMAT parquet, COMPRESSION zstd)", t, filepath.Join(dir, t+".parquet"))
		cpu0, start := measure.SelfCPU(), time.Now()
		if _, err := d.db.ExecContext(ctx, stmt); err != nil {
			return 0, 0, err
		}
		wall += time.Since(start)
		cpu += measure.SelfCPU() - cpu0
	}
	return wall, cpu, nil
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func report(w io.Writer, sp string, ours []exportRun, copies, duckCPU []time.Duration, duckBytes int64) {
	cores := runtime.NumCPU()
	var walls, cpus []time.Duration
	var rss int64
	for _, r := range ours {
		walls = append(walls, r.Wall)
		cpus = append(cpus, r.CPU)
		rss = max(rss, r.PeakRSS)
	}
	rows := ours[0].summary.Rows
	ourMed, duckMed := median(walls), median(copies)
	perCore := func(d time.Duration) float64 { return float64(rows) / d.Seconds() / float64(cores) }
	fmt.Fprintf(w, "savepoint %s: %d rows in %d datasets, %d cores\n", sp, rows, len(ours[0].summary.Datasets), cores)
	fmt.Fprintf(w, "stateproc export: wall median %v (best %v), CPU %v, %.2fM rows/s/core, peak RSS %.0f MiB, %.1f MB written\n",
		ourMed.Round(time.Millisecond), slices.Min(walls).Round(time.Millisecond), median(cpus).Round(time.Millisecond),
		perCore(ourMed)/1e6, float64(rss)/(1<<20), float64(ours[0].summary.Bytes)/1e6)
	fmt.Fprintf(w, "duckdb COPY:      wall median %v (best %v), CPU %v, %.2fM rows/s/core, %.1f MB written\n",
		duckMed.Round(time.Millisecond), slices.Min(copies).Round(time.Millisecond), median(duckCPU).Round(time.Millisecond),
		perCore(duckMed)/1e6, float64(duckBytes)/1e6)
	fmt.Fprintf(w, "ratio export/COPY: wall %.2f (medians; target <= 1), CPU %.2f\n",
		ourMed.Seconds()/duckMed.Seconds(), median(cpus).Seconds()/median(duckCPU).Seconds())
}
