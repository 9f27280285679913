//go:build !linux

package storetest

import "os/exec"

// dieWithParent does nothing where the OS has no parent-death signal: a
// test that panics may leave its server running.
func dieWithParent(*exec.Cmd) {}
