package faults

import (
	"net/http"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/test/harness"
)

// A replica started while PostgreSQL refuses connections does not exit:
// it waits and retries, /readyz answers 503 meanwhile, and it becomes
// ready, and serves, once PostgreSQL starts.
func TestStartWhileDatabaseRefuses(t *testing.T) {
	const waiting = 5 * time.Second // how long PostgreSQL stays down after the replica first answers
	pg, _, c := servers(t, harness.Options{})
	c.Prepare(t)
	pg.Stop(t)

	r := c.Launch(t, 1)[0]
	if err := r.Answering(harness.StartWait); err != nil {
		t.Fatalf("a replica started while PostgreSQL refuses connections: %v", err)
	}
	first := time.Now()
	for time.Since(first) < waiting {
		if !r.Alive() {
			t.Fatalf("the replica exited while PostgreSQL refused connections (%v); last log lines:\n%s", r.Cmd.ProcessState, r.LogsWithoutRequests())
		}
		if readyz(t, r).status != http.StatusServiceUnavailable {
			t.Fatalf("/readyz did not answer 503 while PostgreSQL refused connections, %s after the replica started listening", time.Since(first).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}

	pg.Start(t)
	if err := c.WaitHealthy(r); err != nil {
		t.Fatal(err)
	}
	testsupport.Eventually(t, 2*pollWait, func() bool { return readyNow(r) }, "/readyz still not 200 after PostgreSQL started")
	c.Login(t, harness.OpsEmail) // it serves
}

// readyNow reports whether r answers /readyz with 200.
func readyNow(r *harness.Replica) bool {
	resp, err := r.Client.Get(r.URL + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
