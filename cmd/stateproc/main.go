// Command stateproc inspects, exports and rewrites stateproc savepoints
// without the job's code. See package cli for the commands and exit codes.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/stateproc/stateproc/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
