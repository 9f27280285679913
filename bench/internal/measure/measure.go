// Package measure takes the wall time, CPU time and peak RSS of what the
// benchmarks under bench/ compare: stateproc run in a child process of the
// benchmark, so that the figures are its own, and the other side run in
// the benchmark's process.
package measure

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Usage is what one run took.
type Usage struct {
	Wall, CPU time.Duration
	// PeakRSS is in bytes.
	PeakRSS int64
}

// peakRSSEnv names the file where the child writes its peak RSS in bytes.
// Not the child's rusage Maxrss: Linux counts in it the parent's memory at
// the fork, which holds what the benchmark compares the child with.
const peakRSSEnv = "STATEPROC_BENCH_PEAK_RSS"

// Child runs cmd, which starts this program again to run stateproc and
// call WritePeakRSS before it exits, and returns what it took. The child
// writes its peak RSS to the file rss.
func Child(cmd *exec.Cmd, rss string) (Usage, error) {
	cmd.Env = append(os.Environ(), peakRSSEnv+"="+rss)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return Usage{}, err
	}
	u := Usage{Wall: time.Since(start)}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	u.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	b, err := os.ReadFile(rss)
	if err != nil {
		return Usage{}, err
	}
	if u.PeakRSS, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
		return Usage{}, fmt.Errorf("%s: %w", rss, err)
	}
	return u, nil
}

// WritePeakRSS writes this process's peak RSS where the parent asked for
// it, if it did.
func WritePeakRSS() error {
	n, err := PeakRSS()
	if err != nil {
		return err
	}
	return WriteRSS(n)
}

// WriteRSS writes n bytes as the peak RSS of the child that Child runs,
// where the parent asked for it, if it did: for a child that runs the
// measured program as a process of its own.
func WriteRSS(n int64) error {
	path := os.Getenv(peakRSSEnv)
	if path == "" {
		return nil
	}
	return os.WriteFile(path, []byte(strconv.FormatInt(n, 10)), 0o644)
}

// PeakRSS is this process's peak resident set size (VmHWM), in bytes.
func PeakRSS() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM: %w", err)
			}
			return n * 1024, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}

// SelfCPU is the CPU time of this process, all threads.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
