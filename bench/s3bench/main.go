// Command s3bench measures stateproc against a bucket on a local versitygw
// it starts, as the object-storage benchmark defines it:
//
//	go run ./bench/gensavepoints -out /tmp/bench
//	STATEPROC_VERSITYGW=PATH go run ./bench/s3bench -savepoint /tmp/bench/sessions-large [-runs N] [-work DIR] [-cpuprofile PREFIX] [-only inspect|prune-ttl] [-now INSTANT] [-sums] [-before S3BENCH] [-latency DURATION]
//
// It uploads the savepoint, then runs N times, in turn:
//
//   - `stateproc inspect --scan s3://…` in a child process (its wall time
//     and peak RSS its own), against a baseline in this process that reads
//     the same objects whole with plain concurrent ranged GETs (8 MiB, 4 in
//     flight) and discards them;
//   - `stateproc prune-ttl s3://… --out s3://…` bucket to bucket, against
//     a server-side CopyObject of every object of the savepoint; with
//     -now, a prune in which entries expire; with -sums, the SHA-256 of
//     every object of the first counted run's output.
//
// With -latency, every request of both sides waits that long in the proxy
// before it is served, as a remote store's time to first byte: what the
// requests in flight hide shows.
//
// Every request of both sides goes through the same counting proxy, which
// gives the bytes each read from the server and sent to it, and how many
// GETs it served at once: the most, and on average over the run. Beside
// each side's wall time it gives the CPU time of all the processes that
// served it (the server, this process with the proxy and the baseline's
// client, and the child), which on a machine that runs them all shows
// what the cores had to do. It prints the medians, the median of the
// per-run ratios and the peak RSS.
//
// With -before, the s3bench binary of another build (go build -o … ./bench/s3bench
// in its tree) runs the same command in every run too, just before this
// build's, against the same server and objects: the two builds are
// compared within one run, which a loaded machine needs. It prints the
// other build's figures and the median of the per-run ratios of this
// build's time and CPU to the other's.
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/bench/internal/measure"
	"github.com/stateproc/stateproc/bench/internal/s3local"
	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/internal/storetest"
)

const (
	childFlag = "-child"
	bucket    = "bench"
	inFlight  = 4
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		code := cli.Main(ctx, os.Args[2:], os.Stdout, os.Stderr)
		if err := measure.WritePeakRSS(); err != nil {
			fmt.Fprintf(os.Stderr, "s3bench: %v\n", err)
			code = 1
		}
		os.Exit(code)
	}
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "s3bench: %v\n", err)
		os.Exit(1)
	}
}

// bench is the server, the proxy that counts, and the uploaded savepoint.
type bench struct {
	srv   *storetest.Server
	proxy *storetest.Proxy
	c     *s3.Client // through the proxy
	keys  []string   // the savepoint's objects, under in/
	size  int64
	work  string
	// before is the s3bench binary of the build to compare with, if any.
	before string
	// gets is how many GETs the proxy had served at the last takeGets.
	gets int
	// chunk is the size of the baseline's ranged GETs.
	chunk int64
}

func run(ctx context.Context) error {
	savepoint := flag.String("savepoint", "", "the savepoint `directory` to upload (sessions-large)")
	runs := flag.Int("runs", 3, "timed runs of each pair")
	work := flag.String("work", "", "`directory` for the server's data (default: a temporary one)")
	profile := flag.String("cpuprofile", "", "write the CPU profile of each counted run of stateproc to `prefix`-NAME-RUN.prof")
	only := flag.String("only", "", "run only the pair of this `command` (inspect or prune-ttl)")
	now := flag.String("now", "", "pass --now `INSTANT` to prune-ttl, so that entries expire")
	sums := flag.Bool("sums", false, "print the SHA-256 of every object prune-ttl writes in the first counted run")
	before := flag.String("before", "", "the s3bench `binary` of another build, whose stateproc runs each command too, for comparison")
	chunk := flag.Int64("chunk", 8<<20, "the `bytes` of each of the baseline's ranged GETs")
	latency := flag.Duration("latency", 0, "make every request of both sides wait this `long` in the proxy before it is served, as a remote store's time to first byte")
	flag.Parse()
	if *savepoint == "" {
		return errors.New("-savepoint is required")
	}
	if *chunk < 1 {
		return errors.New("-chunk must be positive")
	}
	st, err := s3local.Start(*work, bucket)
	if err != nil {
		return err
	}
	defer st.Close()
	// The children's peak RSS is passed through a file here.
	dir, err := os.MkdirTemp(*work, "s3bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, proxy := st.Srv, st.Proxy
	b := &bench{srv: srv, proxy: proxy, c: srv.Client(proxy.URL), work: dir, before: *before, chunk: *chunk}
	start := time.Now()
	if b.keys, b.size, err = st.Upload(ctx, *savepoint, bucket, "in"); err != nil {
		return err
	}
	fmt.Printf("uploaded %d objects, %d bytes, in %v\n", len(b.keys), b.size, time.Since(start).Round(time.Millisecond))
	if *latency > 0 {
		proxy.SetLatency(*latency)
		fmt.Printf("every request waits %v in the proxy\n", *latency)
	}
	in := storetest.URL(proxy.URL, bucket, "in")
	pairs := []pair{
		{name: "inspect --scan", baseline: "ranged GETs", base: b.rangedGets,
			command: func(int) []string { return []string{"inspect", "--scan", in} }},
		{name: "prune-ttl bucket to bucket", baseline: "server-side copy", base: b.serverCopy,
			command: func(i int) []string {
				args := []string{"prune-ttl", in, "--out", storetest.URL(proxy.URL, bucket, fmt.Sprintf("out-%d", i))}
				if *now != "" {
					args = append(args, "--now", *now)
				}
				return args
			},
			after: func(i int) error {
				if *sums && i == 1 {
					if err := b.printSums(ctx, "out-1/"); err != nil {
						return err
					}
				}
				return b.remove(ctx, fmt.Sprintf("out-%d/", i))
			},
			afterBase: func(i int) error { return b.remove(ctx, fmt.Sprintf("copy-%d/", i)) }},
	}
	for _, p := range pairs {
		if *only != "" && strings.Fields(p.name)[0] != *only {
			continue
		}
		if *profile != "" {
			p.command = profiled(p.command, fmt.Sprintf("%s-%s", *profile, strings.Fields(p.name)[0]))
		}
		if err := b.measure(ctx, p, *runs); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}

// pair is a command and its baseline.
type pair struct {
	name, baseline string
	base           func(ctx context.Context, run int) error
	command        func(run int) []string
	// after and afterBase remove what a run of either side wrote, untimed.
	after, afterBase func(run int) error
}

// profiled has command write its CPU profile to prefix-RUN.prof.
func profiled(command func(int) []string, prefix string) func(int) []string {
	return func(i int) []string {
		return append(command(i), "--cpuprofile", fmt.Sprintf("%s-%d.prof", prefix, i))
	}
}

// sample is one timed side of one run, with the proxy's byte counts.
type sample struct {
	wall, cpu        time.Duration
	rss              int64
	served, received int64
	// gets is the most GETs served at once, meanGets how many on average.
	gets     int
	meanGets float64
	// requests is how many GETs the side made.
	requests int
	// all is the CPU time of every process of the side: the server's, this
	// one's (the proxy, and the baseline's client) and the child's.
	all time.Duration
	// server is the server's share of all.
	server time.Duration
}

// cpuMark is what the processes of a side have used of the CPU when it
// starts.
type cpuMark struct{ server, self time.Duration }

func (b *bench) markCPU() cpuMark {
	srv, _ := b.srv.CPU()
	return cpuMark{srv, selfCPU()}
}

// since is the CPU that the server and this process used since m, plus
// child, and the server's share of it.
func (m cpuMark) since(b *bench, child time.Duration) (all, server time.Duration) {
	now := b.markCPU()
	return now.server - m.server + now.self - m.self + child, now.server - m.server
}

// selfCPU is the CPU time this process has used so far.
func selfCPU() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// takeGets fills the GET concurrency of s, a side that has just ended.
func (b *bench) takeGets(s *sample) {
	peak, busy := b.proxy.TakeConcurrency("GetObject")
	s.gets, s.meanGets = peak, busy.Seconds()/s.wall.Seconds()
	n := b.proxy.Ops("GetObject")
	s.requests, b.gets = n-b.gets, n
}

func (b *bench) measure(ctx context.Context, p pair, runs int) error {
	rss := filepath.Join(b.work, "rss")
	var cmds, befores, bases []sample
	// Run 0 warms both up and is not counted.
	for i := 0; i <= runs; i++ {
		var o sample
		if b.before != "" {
			var err error
			if o, err = b.child(ctx, p, b.before, i, rss); err != nil {
				return fmt.Errorf("the build before: %w", err)
			}
		}
		c, err := b.child(ctx, p, os.Args[0], i, rss)
		if err != nil {
			return err
		}
		served, received := b.proxy.ServedBytes(), b.proxy.BodyBytes()
		b.proxy.TakeConcurrency("GetObject")
		mark := b.markCPU()
		start := time.Now()
		if err := p.base(ctx, i); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		s := sample{wall: time.Since(start), served: b.proxy.ServedBytes() - served, received: b.proxy.BodyBytes() - received}
		s.all, s.server = mark.since(b, 0)
		b.takeGets(&s)
		if p.afterBase != nil {
			if err := p.afterBase(i); err != nil {
				return err
			}
		}
		if i == 0 {
			continue
		}
		cmds, bases = append(cmds, c), append(bases, s)
		fmt.Printf("  %s run %d: %v (CPU %v, all processes %v, the server %v, read %d, sent %d bytes, %d GETs, in flight %.1f on average, %d at most, peak RSS %.0f MiB); %s %v (all processes' CPU %v, the server %v, read %d, sent %d, %d GETs, in flight %.1f, %d); ratio %.2f\n",
			p.name, i, c.wall.Round(time.Millisecond), c.cpu.Round(time.Millisecond), c.all.Round(time.Millisecond), c.server.Round(time.Millisecond), c.served, c.received, c.requests, c.meanGets, c.gets, float64(c.rss)/(1<<20),
			p.baseline, s.wall.Round(time.Millisecond), s.all.Round(time.Millisecond), s.server.Round(time.Millisecond), s.served, s.received, s.requests, s.meanGets, s.gets, c.wall.Seconds()/s.wall.Seconds())
		if b.before != "" {
			befores = append(befores, o)
			fmt.Printf("    the build before: %v (CPU %v, read %d, sent %d bytes, %d GETs, in flight %.1f on average, %d at most, peak RSS %.0f MiB)\n",
				o.wall.Round(time.Millisecond), o.cpu.Round(time.Millisecond), o.served, o.received, o.requests, o.meanGets, o.gets, float64(o.rss)/(1<<20))
		}
	}
	var ratios []float64
	var peak int64
	for i := range cmds {
		ratios = append(ratios, cmds[i].wall.Seconds()/bases[i].wall.Seconds())
		peak = max(peak, cmds[i].rss)
	}
	fmt.Printf("%s: median %v (CPU %v, all processes %v, the server %v) against %s %v (all processes %v, the server %v); median ratio %.2f over %d runs; peak RSS %.0f MiB; savepoint %d bytes\n",
		p.name, medianOf(cmds, wallOf), medianOf(cmds, cpuOf), medianOf(cmds, allOf), medianOf(cmds, serverOf), p.baseline, medianOf(bases, wallOf), medianOf(bases, allOf), medianOf(bases, serverOf),
		median(ratios), len(ratios), float64(peak)/(1<<20), b.size)
	if b.before != "" {
		var walls, cpus, theirs []float64
		var peak int64
		for i := range befores {
			walls = append(walls, cmds[i].wall.Seconds()/befores[i].wall.Seconds())
			cpus = append(cpus, cmds[i].cpu.Seconds()/befores[i].cpu.Seconds())
			theirs = append(theirs, befores[i].wall.Seconds()/bases[i].wall.Seconds())
			peak = max(peak, befores[i].rss)
		}
		fmt.Printf("%s, the build before: median %v (CPU %v), median ratio %.2f to the %s; peak RSS %.0f MiB; this build against it: wall %.2f, CPU %.2f (medians of the per-run ratios)\n",
			p.name, medianOf(befores, wallOf), medianOf(befores, cpuOf), median(theirs), p.baseline, float64(peak)/(1<<20), median(walls), median(cpus))
	}
	return nil
}

// child runs the pair's command for run i in a child process of bin, an
// s3bench binary, and removes what it wrote.
func (b *bench) child(ctx context.Context, p pair, bin string, i int, rss string) (sample, error) {
	served, received := b.proxy.ServedBytes(), b.proxy.BodyBytes()
	b.proxy.TakeConcurrency("GetObject")
	mark := b.markCPU()
	cmd := exec.CommandContext(ctx, bin, append([]string{childFlag}, p.command(i)...)...)
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	u, err := measure.Child(cmd, rss)
	if err != nil {
		return sample{}, fmt.Errorf("stateproc %v: %w: %s", p.command(i), err, stderr.String())
	}
	c := sample{wall: u.Wall, cpu: u.CPU, rss: u.PeakRSS, served: b.proxy.ServedBytes() - served, received: b.proxy.BodyBytes() - received}
	c.all, c.server = mark.since(b, u.CPU)
	b.takeGets(&c)
	if p.after != nil {
		if err := p.after(i); err != nil {
			return sample{}, err
		}
	}
	return c, nil
}

// medianOf is the median over s of the duration f takes from a sample.
func medianOf(s []sample, f func(*sample) time.Duration) time.Duration {
	v := make([]float64, len(s))
	for i := range s {
		v[i] = float64(f(&s[i]))
	}
	return time.Duration(median(v)).Round(time.Millisecond)
}

func wallOf(s *sample) time.Duration   { return s.wall }
func cpuOf(s *sample) time.Duration    { return s.cpu }
func allOf(s *sample) time.Duration    { return s.all }
func serverOf(s *sample) time.Duration { return s.server }

func median(v []float64) float64 {
	v = slices.Clone(v)
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// rangedGets reads every object of the savepoint whole, in ranged GETs of
// b.chunk bytes (8 MiB unless -chunk says otherwise), 4 in flight, and
// discards the bytes.
func (b *bench) rangedGets(ctx context.Context, _ int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for _, key := range b.keys {
		head, err := b.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return err
		}
		size := aws.ToInt64(head.ContentLength)
		for off := int64(0); off < size; off += b.chunk {
			end := min(off+b.chunk, size) - 1
			g.Go(func() error {
				out, err := b.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
					Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, end))})
				if err != nil {
					return err
				}
				defer out.Body.Close()
				_, err = io.Copy(io.Discard, out.Body)
				return err
			})
		}
	}
	return g.Wait()
}

// serverCopy copies every object of the savepoint on the server, as a
// rewrite that changes nothing at best could, under copy-RUN/.
func (b *bench) serverCopy(ctx context.Context, run int) error {
	prefix := fmt.Sprintf("copy-%d/", run)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for _, key := range b.keys {
		g.Go(func() error {
			_, err := b.c.CopyObject(gctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), CopySource: aws.String(bucket + "/" + key),
				Key: aws.String(prefix + strings.TrimPrefix(key, "in/"))})
			return err
		})
	}
	return g.Wait()
}

// printSums prints the name and SHA-256 of every object under prefix, read
// straight from the server, so that the outputs of two builds can be
// compared.
func (b *bench) printSums(ctx context.Context, prefix string) error {
	direct := b.srv.Client(b.srv.Endpoint())
	list, err := direct.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		return err
	}
	for _, o := range list.Contents {
		out, err := direct.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, out.Body)
		out.Body.Close()
		if err != nil {
			return err
		}
		fmt.Printf("  sha256 %x  %s\n", h.Sum(nil), strings.TrimPrefix(aws.ToString(o.Key), prefix))
	}
	return nil
}

// remove deletes the objects under prefix.
func (b *bench) remove(ctx context.Context, prefix string) error {
	list, err := b.c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		return err
	}
	for _, o := range list.Contents {
		if _, err := b.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key}); err != nil {
			return err
		}
	}
	return nil
}
