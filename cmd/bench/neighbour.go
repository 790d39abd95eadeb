package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// neighbourMain is `bench neighbour`: a CPU-bound process of -threads busy
// threads that never sleep, until SIGTERM. It stands for the other work of
// a shared machine, so a measure can be read with the machine busy as well
// as quiet; it runs through Herald's runs and the ceilings' alike, so the
// ratios stay side by side.
func neighbourMain(args []string) error {
	fs := flag.NewFlagSet("neighbour", flag.ExitOnError)
	threads := fs.Int("threads", 1, "busy threads")
	_ = fs.Parse(args)
	if *threads < 1 {
		return fmt.Errorf("neighbour: -threads must be at least 1")
	}
	runtime.GOMAXPROCS(*threads)
	for range *threads {
		go func() {
			sum := sha256.Sum256(nil)
			for {
				sum = sha256.Sum256(sum[:])
			}
		}()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	return nil
}
