// Package cluster runs three replicas of the real herald binary on one
// fresh PostgreSQL database and one Redis, behind a round-robin reverse
// proxy started in the test, with a fake FCM (fcmtest), a fake Telegram
// (telegramtest) and a fake SMTP server (mailtest) shared by the replicas,
// and checks that they behave as one server (issue 9). The harness that
// runs them is test/harness, shared with test/faults.
//
// The tests need HERALD_TEST_POSTGRES_URL and HERALD_TEST_REDIS_URL and
// skip, saying so, without them. They run one after the other (each
// cluster is two cores' worth of work on the CI machine, and they share
// Redis database 5, which each cluster empties first).
//
// Every wait is bounded: conditions are polled until a deadline. The
// deadlines are generous bounds for eventual conditions, never
// measurements of how long something took; the one stated bound, the
// takeover time (lease TTL + takeoverSlack), is what issue 9 promises.
package cluster

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/test/harness"
)

const (
	replicas = 3

	leaseTTL = harness.LeaseTTL
	// takeoverSlack is the "few seconds" past the lease TTL within which a
	// live replica must have taken over the work of a dead one.
	takeoverSlack = 7 * time.Second

	pollWait = harness.PollWait
	mailWait = 20 * time.Second // an email arrives
	jobWait  = 60 * time.Second // a broadcast finishes
	redisDB  = 5                // the Redis database of these tests
	password = harness.Password
	opsEmail = harness.OpsEmail
)

type (
	cluster = harness.Cluster
	replica = harness.Replica
)

func TestMain(m *testing.M) { harness.Main(m) }

// needBackends skips the test, saying why, unless PostgreSQL and Redis
// are configured, and returns the Redis URL of this package's database,
// emptied.
func needBackends(t *testing.T) string {
	t.Helper()
	if os.Getenv("HERALD_TEST_POSTGRES_URL") == "" {
		t.Skip("HERALD_TEST_POSTGRES_URL is not set: the cluster tests run three replicas on one PostgreSQL")
	}
	raw := os.Getenv("HERALD_TEST_REDIS_URL")
	if raw == "" {
		t.Skip("HERALD_TEST_REDIS_URL is not set: the cluster tests run three replicas on one Redis")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("HERALD_TEST_REDIS_URL: %v", err)
	}
	u.Path = fmt.Sprintf("/%d", redisDB)
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		t.Fatalf("HERALD_TEST_REDIS_URL: %v", err)
	}
	rc := redis.NewClient(opts)
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rc.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("empty Redis database %d: %v", redisDB, err)
	}
	return u.String()
}

// newCluster prepares a cluster (nothing is started) on a fresh
// PostgreSQL schema and this package's Redis database, with extra over
// the harness's configuration.
func newCluster(t *testing.T, extra map[string]string) *cluster {
	t.Helper()
	redisURL := needBackends(t)
	return harness.New(t, harness.Options{DatabaseURL: sqlstoretest.NewURL(t, "postgres"), RedisURL: redisURL, Env: extra})
}

var (
	names           = harness.Names
	expectCompleted = harness.ExpectCompleted
	asInt           = harness.AsInt
	// jsonPath walks nested objects: jsonPath(data, "login", "accessToken").
	jsonPath = testsupport.JSONPath
)
