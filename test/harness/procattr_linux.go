package harness

import "syscall"

// dieWithParent makes a child process get SIGKILL when the test process
// dies, so a test killed by its timeout leaves no server behind.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
