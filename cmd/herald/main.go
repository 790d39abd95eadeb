// Command herald runs Herald, the accounts, notifications and messaging back
// end of a VPN product. See the README for its configuration.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if err != errUsage {
			fmt.Fprintln(os.Stderr, "herald:", err)
		}
		os.Exit(exitCode(err))
	}
}
