// Command exportbench measures `stateproc export` against DuckDB writing the
// same rows, and carries the small tools that go with it:
//
//	go run ./bench/exportbench run -savepoint DIR [-runs N] [-work DIR] [-stateproc BIN]
//	go run ./bench/exportbench gen -out DIR [-users N]
//	go run ./bench/exportbench query 'SQL'
//	go run ./bench/exportbench rows EXPORT
//
// run exports the savepoint once to warm up and loads what it wrote into
// in-memory DuckDB tables: the same rows with the same column types. Then,
// N times, it exports the savepoint in a child process, so that the
// export's wall time, CPU time and peak RSS are its own, and times DuckDB's
// COPY of the tables to zstd Parquet, and only the COPY. The two take
// turns so that both see the same machine; medians and bests are
// reported. The export measured is the stateproc binary that -stateproc
// names or, by default, one that run builds as stateproc ships, with
// -pgo=auto (the checked-in profile cmd/stateproc/default.pgo), from the
// module's root; so run it from within the module:
//
//	go build -o /tmp/exportbench ./bench/exportbench && /tmp/exportbench run -savepoint DIR
//
// rows prints, for each dataset of an export, what DuckDB reads from it:
// its rows and a checksum of them as a multiset (the sum of the rows'
// hashes), which the order of rows and files does not change, so that
// two exports are compared row for row without their bytes.
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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: exportbench run|gen|query|rows ...")
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
	case "rows":
		err = runRows(ctx, os.Args[2:], os.Stdout)
	case "child":
		// The child process of run, which runs stateproc export.
		code, err := runChild(ctx, os.Args[2:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "exportbench:", err)
			code = 1
		}
		os.Exit(code)
	default:
		err = fmt.Errorf("unknown command %q: want run, gen, query or rows", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "exportbench:", err)
		os.Exit(1)
	}
}
