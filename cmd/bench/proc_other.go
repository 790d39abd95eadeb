//go:build !linux

package main

import "syscall"

// childAttr: no parent-death signal outside Linux; children are stopped by
// the kit's cleanup.
func childAttr() *syscall.SysProcAttr { return nil }
