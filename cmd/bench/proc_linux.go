package main

import "syscall"

// childAttr makes a child die with the kit, even when the kit is killed.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
