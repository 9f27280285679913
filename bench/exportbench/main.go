// Command exportbench measures `stateproc export` against DuckDB writing the
// same rows, and carries the small tools that go with it:
//
//	go run ./bench/exportbench run -savepoint DIR [-runs N] [-work DIR]
//	go run ./bench/exportbench gen -out DIR [-users N]
//	go run ./bench/exportbench query 'SQL'
//
// run exports the savepoint once to warm up and loads what it wrote into
// in-memory DuckDB tables: the same rows with the same column types. Then,
// N times, it exports the savepoint in a child process, so that the
// export's wall time, CPU time and peak RSS are its own, and times DuckDB's
// COPY of the tables to zstd Parquet, and only the COPY. The two take
// turns so that both see the same machine; medians and bests are
// reported. The child is this program, so that its figures are those of
// stateproc only when it is built as stateproc is, with the command's
// profile for profile-guided optimization, which `go run` leaves out:
//
//	go build -pgo=cmd/stateproc/default.pgo -o /tmp/exportbench ./bench/exportbench
//
// gen writes a savepoint of the shape of the brief's sessions-large (see
// runGen) for when the real one, which runs the job, is not at hand. query
// runs SQL in an in-memory DuckDB and prints the result, as the README's
// example does.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/stateproc/stateproc/bench/internal/measure"
	"github.com/stateproc/stateproc/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: exportbench run|gen|query ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runBench(ctx, os.Args[2:], os.Stdout, os.Stderr)
	case "gen":
		err = runGen(ctx, os.Args[2:], os.Stderr)
	case "query":
		err = runQuery(ctx, os.Args[2:], os.Stdout)
	case "export":
		// The child process of run: stateproc export itself.
		code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
		if err := measure.WritePeakRSS(); err != nil {
			fmt.Fprintln(os.Stderr, "exportbench:", err)
			code = 1
		}
		os.Exit(code)
	default:
		err = fmt.Errorf("unknown command %q: want run, gen or query", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "exportbench:", err)
		os.Exit(1)
	}
}
