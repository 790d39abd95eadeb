package faults

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/test/harness"
)

// PostgreSQL out of connection slots at run time ("too many clients
// already", SQLSTATE 53300), as when several instances share a server:
// Herald's connections are terminated while every slot is taken, so it
// cannot get one back. Clients get 503 SERVICE_UNAVAILABLE with
// Retry-After meanwhile, never a 500, and everything serves again once
// slots are free.
func TestConnectionsExhausted(t *testing.T) {
	pg, _, c := servers(t, harness.Options{})
	c.Prepare(t)
	c.Start(t, 1)
	admin := c.Login(t, harness.OpsEmail)
	probe := startProber(t, c, admin)

	ctx := context.Background()
	// The test's own session, opened before the slots run out.
	ctl, err := pgx.Connect(ctx, pg.URL("postgres", "herald-faults-control"))
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close(ctx)
	var fillers []*pgx.Conn
	defer func() {
		for _, f := range fillers {
			f.Close(ctx)
		}
	}()
	// fill takes every free slot; it fails the test on any error but the
	// refusal it waits for.
	fill := func() {
		for range 200 {
			f, err := pgx.Connect(ctx, pg.URL("postgres", "herald-faults-filler"))
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "53300" {
				return
			}
			if err != nil {
				t.Fatalf("filling the connection slots: %v", err)
			}
			fillers = append(fillers, f)
		}
		t.Fatal("200 connections and no refusal: is max_connections above 200?")
	}
	heraldConns := func() int {
		var n int
		if err := ctl.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, heraldApp).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	exhaustedAt := time.Now()
	testsupport.Eventually(t, pollWait, func() bool {
		fill()
		if _, err := ctl.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, heraldApp); err != nil {
			t.Fatal(err)
		}
		fill() // the slots Herald's sessions left
		return heraldConns() == 0
	}, "Herald kept connections while the slots were taken")
	t.Logf("%d connections hold every slot; Herald has none", len(fillers))

	testsupport.Eventually(t, pollWait, func() bool {
		fill() // whatever the server freed meanwhile
		return probe.Unavailable("login", exhaustedAt) >= 3
	}, "no login answered 503 while PostgreSQL had no connection slot free")

	for _, f := range fillers {
		f.Close(ctx)
	}
	fillers = nil
	recoveredFrom := time.Now()
	testsupport.Eventually(t, pollWait, func() bool {
		ok := 0
		for _, o := range probe.Outcomes() {
			if o.At.After(recoveredFrom) && o.Status == http.StatusOK {
				ok++
			}
		}
		return ok >= 4
	}, "Herald did not serve again once connection slots were free")
	probe.Stop()
	t.Logf("answers: %v", probe.check(t))
	for _, r := range c.Replicas() {
		for _, e := range r.Logged("request", map[string]string{"status": "500"}) {
			t.Errorf("%s answered 500: %v", r.Name, e)
			for _, l := range r.LogEntries() {
				if l["request_id"] == e["request_id"] && l.Msg() != "request" {
					t.Errorf("  its log: %v", l)
				}
			}
		}
	}
}
