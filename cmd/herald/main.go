// Command herald runs Herald, the accounts, notifications and messaging back
// end of a VPN product. See docs/configuration.md for its configuration.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/herald-vpn/herald/internal/config"
)

func main() {
	// The process's memory limit is set here, not in run: tests run many
	// servers in one process.
	if os.Getenv("GOMEMLIMIT") == "" {
		if cfg, err := config.Load(os.Getenv); err == nil {
			debug.SetMemoryLimit(memoryLimit(cfg))
		}
	}
	// A server's heap between requests is small, so the default GOGC=100
	// collects often; 200 halves that work. The memory limit above still
	// bounds the process (it is what governs under password load).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if err != errUsage && err != errChecksFailed {
			fmt.Fprintln(os.Stderr, "herald:", err)
		}
		os.Exit(exitCode(err))
	}
}
