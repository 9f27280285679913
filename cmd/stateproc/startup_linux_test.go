//go:build linux

package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkStartup runs the built binary with --version: what every
// command pays before it does anything. It reports the peak RSS and the
// minor page faults of one run beside the time (Linux, where Maxrss
// is in KiB).
func BenchmarkStartup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "stateproc")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	var rss, faults int64
	for b.Loop() {
		cmd := exec.Command(bin, "--version")
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		u := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		rss, faults = max(rss, u.Maxrss), faults+u.Minflt
	}
	b.ReportMetric(float64(rss)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(faults)/float64(b.N), "page-faults/op")
}
