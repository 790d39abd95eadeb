//go:build !linux

package sqlstore

import (
	"syscall"
	"time"
)

// controlUserTimeout sets nothing: TCP_USER_TIMEOUT is Linux's; keepalive
// alone detects a dead connection here.
func controlUserTimeout(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
