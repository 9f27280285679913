package storetest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the server die with the test process, even one that
// panics before its cleanups run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
