//go:build !linux

package storetest

import (
	"os/exec"
	"time"
)

// dieWithParent does nothing where the OS has no parent-death signal: a
// test that panics may leave its server running.
func dieWithParent(*exec.Cmd) {}

// processCPU reports nothing where there is no /proc.
func processCPU(int) (time.Duration, bool) { return 0, false }
