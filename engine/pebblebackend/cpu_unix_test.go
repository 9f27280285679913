//go:build unix

package pebblebackend

import (
	"syscall"
	"testing"
	"time"
)

// cpuPerOp starts counting the CPU time of the process, Pebble's background
// work included; the returned function reports it per op as cpu-ns/op. On a
// machine shared with other work, CPU time varies far less than wall time.
func cpuPerOp(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
