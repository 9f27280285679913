// Command s3rounds shows how many round trips to a bucket each command of
// stateproc waits for, one after another: it runs every command against a
// savepoint uploaded to a local versitygw (which it starts), once as the
// loopback answers and once with every request held -latency in the
// proxy, as a remote store's time to first byte, and prints both wall
// times, the round trips the difference amounts to, and the requests made
// by operation. A command that keeps its requests in flight together
// waits a few round trips whatever the savepoint's size; one that makes
// them one after another waits one for each.
//
//	go run ./bench/gensavepoints -out /tmp/bench -scale 0.1
//	STATEPROC_VERSITYGW=PATH go run ./bench/s3rounds -savepoint /tmp/bench/gateway-large -operator assemble -state open [-latency 50ms]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stateproc/stateproc/bench/internal/s3local"
	"github.com/stateproc/stateproc/cli"
)

const bucket = "rounds"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "s3rounds: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	savepoint := flag.String("savepoint", "", "the savepoint `directory` to upload")
	operator := flag.String("operator", "", "the `uid` of a keyed operator, for dump and operator rename")
	state := flag.String("state", "", "the `name` of a state of that operator, for dump")
	latency := flag.Duration("latency", 50*time.Millisecond, "how `long` every request waits in the proxy in the second run")
	work := flag.String("work", "", "`directory` for the server's data and the local outputs (default: a temporary one)")
	flag.Parse()
	if *savepoint == "" || *operator == "" || *state == "" {
		return errors.New("-savepoint, -operator and -state are required")
	}
	st, err := s3local.Start(*work, bucket)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, _, err := st.Upload(ctx, *savepoint, bucket, "in"); err != nil {
		return err
	}
	local, err := os.MkdirTemp(*work, "s3rounds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(local)
	in := st.URL(bucket, "in")
	// Each command of a run writes to a target of its own.
	commands := []struct {
		name string
		args func(run int) []string
	}{
		{"inspect", func(int) []string { return []string{"inspect", in} }},
		{"inspect --scan", func(int) []string { return []string{"inspect", "--scan", in} }},
		{"verify --deep", func(int) []string { return []string{"verify", "--deep", in} }},
		{"dump", func(int) []string { return []string{"dump", in, "--operator", *operator, "--state", *state} }},
		{"diff", func(int) []string { return []string{"diff", in, in} }},
		{"size", func(int) []string { return []string{"size", in} }},
		{"report of three", func(r int) []string {
			return []string{"report", in, in, in, "--out", filepath.Join(local, fmt.Sprintf("report-%d.html", r))}
		}},
		{"export to disk", func(r int) []string {
			return []string{"export", in, "--out", filepath.Join(local, fmt.Sprintf("export-%d", r))}
		}},
		{"export to the bucket", func(r int) []string {
			return []string{"export", in, "--out", st.URL(bucket, fmt.Sprintf("export-%d", r))}
		}},
		{"prune-ttl to the bucket", func(r int) []string {
			return []string{"prune-ttl", in, "--out", st.URL(bucket, fmt.Sprintf("prune-%d", r))}
		}},
		{"prune-ttl to disk", func(r int) []string {
			return []string{"prune-ttl", in, "--out", filepath.Join(local, fmt.Sprintf("prune-%d", r))}
		}},
		{"rescale to 2x", func(r int) []string {
			return []string{"rescale", in, "--max-parallelism", "256", "--out", st.URL(bucket, fmt.Sprintf("rescale2-%d", r))}
		}},
		{"rescale to 720", func(r int) []string {
			return []string{"rescale", in, "--max-parallelism", "720", "--out", st.URL(bucket, fmt.Sprintf("rescale720-%d", r))}
		}},
		{"operator rename", func(r int) []string {
			return []string{"operator", "rename", in, *operator, "renamed", "--out", st.URL(bucket, fmt.Sprintf("rename-%d", r))}
		}},
	}
	ops := []string{"GetObject", "HeadObject", "ListObjects", "PutObject", "CopyObject", "CreateMultipartUpload", "UploadPart", "UploadPartCopy",
		"CompleteMultipartUpload", "DeleteObject"}
	fmt.Printf("%-24s %9s %9s %7s  %s\n", "command", "loopback", "+"+latency.String(), "rounds", "requests with the latency")
	for _, c := range commands {
		var walls [2]time.Duration
		var counts []string
		for run, l := range []time.Duration{0, *latency} {
			st.Proxy.SetLatency(l)
			before := make(map[string]int, len(ops))
			for _, op := range ops {
				before[op] = st.Proxy.Ops(op)
			}
			var stderr strings.Builder
			start := time.Now()
			if code := cli.Main(ctx, c.args(run), io.Discard, &stderr); code != cli.ExitOK {
				return fmt.Errorf("%s: exit %d: %s", c.name, code, stderr.String())
			}
			walls[run] = time.Since(start)
			counts = counts[:0]
			for _, op := range ops {
				if n := st.Proxy.Ops(op) - before[op]; n > 0 {
					counts = append(counts, fmt.Sprintf("%s %d", op, n))
				}
			}
		}
		slices.Sort(counts)
		rounds := float64(walls[1]-walls[0]) / float64(*latency)
		fmt.Printf("%-24s %7.0fms %7.0fms %7.1f  %s\n", c.name, ms(walls[0]), ms(walls[1]), rounds, strings.Join(counts, ", "))
	}
	return nil
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }
