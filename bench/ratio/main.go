// Command ratio times a command against a baseline, side by side in one
// run, so that the noise of a shared machine falls on both:
//
//	go run ./bench/ratio [-n RUNS] [-json] --baseline 'SHELL COMMAND' -- COMMAND [ARGS...]
//	go run ./bench/ratio --baseline 'cat DIR/* > /dev/null' -- /tmp/stateproc inspect --scan DIR
//
// It runs one warm-up of each (page cache, build caches), then the baseline
// and the command in turn, B A B A ..., RUNS times each, and prints the
// median, min and max wall seconds, the median CPU seconds (user + sys) and
// the peak RSS of both, and the median of the per-pair ratios
// command/baseline: quote that ratio, not the absolute seconds. The
// baseline runs under `sh -c`; the command runs as given, with no shell.
// The output of both is discarded.
//
// Peak RSS is the child's ru_maxrss from wait4. Linux counts in it the
// memory of this process at the fork, a few MiB, which is therefore the
// smallest figure it can show.
//
// Exit status: 0; 1 if any counted run of the command failed; 2 for bad
// usage or when a child cannot be started.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"
)

func main() { os.Exit(ratioMain(os.Args[1:], os.Stdout, os.Stderr)) }

// usage is one run of a child.
type usage struct {
	wall, cpu time.Duration
	rssKiB    int64
	failed    bool
}

// run starts argv with its output discarded and waits for it.
func run(argv []string) (usage, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return usage{}, err
	}
	err := cmd.Wait()
	u := usage{wall: time.Since(start)}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return usage{}, err
	}
	u.failed = err != nil
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	u.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	u.rssKiB = ru.Maxrss // kilobytes on Linux
	return u, nil
}

// Spread summarizes one figure over the counted runs.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func spread(xs []float64) Spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// Side is what one side took over the counted runs.
type Side struct {
	Command    []string `json:"command"`
	WallS      Spread   `json:"wall_s"`
	CPUS       Spread   `json:"cpu_s"`
	PeakRSSMiB float64  `json:"peak_rss_mib"`
	Failed     int      `json:"failed"`
}

// Result is the -json output.
type Result struct {
	Runs     int    `json:"runs"`
	Baseline Side   `json:"baseline"`
	Command  Side   `json:"command"`
	Ratio    Spread `json:"ratio"`
}

func side(argv []string, us []usage) Side {
	s := Side{Command: argv}
	var wall, cpu []float64
	for _, u := range us {
		wall, cpu = append(wall, u.wall.Seconds()), append(cpu, u.cpu.Seconds())
		s.PeakRSSMiB = max(s.PeakRSSMiB, float64(u.rssKiB)/1024)
		if u.failed {
			s.Failed++
		}
	}
	s.WallS, s.CPUS = spread(wall), spread(cpu)
	return s
}

func ratioMain(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("ratio", flag.ContinueOnError)
	fl.SetOutput(stderr)
	n := fl.Int("n", 5, "counted runs of each")
	baseline := fl.String("baseline", "", "shell command to compare against (required)")
	asJSON := fl.Bool("json", false, "print the figures as JSON")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: ratio [-n RUNS] [-json] --baseline 'SHELL COMMAND' -- COMMAND [ARGS...]")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return 2
	}
	cmd := fl.Args()
	switch {
	case *baseline == "":
		fmt.Fprintln(stderr, "ratio: --baseline is required")
		return 2
	case len(cmd) == 0:
		fmt.Fprintln(stderr, "ratio: no command after --")
		return 2
	case *n < 1:
		fmt.Fprintf(stderr, "ratio: -n %d: at least one run is needed\n", *n)
		return 2
	}
	base := []string{"sh", "-c", *baseline}
	var bs, cs []usage
	var ratios []float64
	for i := -1; i < *n; i++ {
		b, err := run(base)
		if err != nil {
			fmt.Fprintf(stderr, "ratio: baseline: %v\n", err)
			return 2
		}
		c, err := run(cmd)
		if err != nil {
			fmt.Fprintf(stderr, "ratio: command: %v\n", err)
			return 2
		}
		if i < 0 {
			continue // the warm-up
		}
		bs, cs = append(bs, b), append(cs, c)
		ratios = append(ratios, c.wall.Seconds()/b.wall.Seconds())
	}
	res := Result{Runs: *n, Baseline: side(base, bs), Command: side(cmd, cs), Ratio: spread(ratios)}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		line := func(name string, s Side) {
			fmt.Fprintf(stdout, "%-8s wall s   median %8.3f  min %8.3f  max %8.3f   cpu s median %8.3f   peak RSS MiB %8.1f\n",
				name, s.WallS.Median, s.WallS.Min, s.WallS.Max, s.CPUS.Median, s.PeakRSSMiB)
		}
		line("baseline", res.Baseline)
		line("command", res.Command)
		fmt.Fprintf(stdout, "ratio command/baseline: median %.2f (min %.2f, max %.2f) over %d pairs\n",
			res.Ratio.Median, res.Ratio.Min, res.Ratio.Max, *n)
	}
	if f := res.Command.Failed; f > 0 {
		fmt.Fprintf(stderr, "ratio: the command failed in %d of %d runs\n", f, *n)
		return 1
	}
	return 0
}
