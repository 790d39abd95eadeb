package accounts_test

// Benchmarks of the two account operations with a cost: signup (an argon2id
// hash and one transaction that also queues the email job) and verify (a
// keyed-hash compare in a transaction; no argon2id). They run the real
// service on the real store, SQLite always and PostgreSQL when
// HERALD_TEST_POSTGRES_URL is set. The argon2id cost is in the signup
// sub-benchmark's name; the production default is password.DefaultParams()
// (m=65536 KiB, t=3, p=2), so that is the honest signup figure.
//
//	go test -run='^$' -bench=. -benchmem ./internal/accounts/

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/password"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/riverqueue/river"
)

// cheapParams is the argon2id cost the test suites use.
var cheapParams = password.Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}

func newBenchService(b *testing.B, d sqlstoretest.Dialect, p password.Params, mailer accounts.Mailer) *accounts.Service {
	b.Helper()
	ctx := context.Background()
	// The email job is registered (inserting it requires that) but never
	// worked: the jobs are not started.
	workers := river.NewWorkers()
	db, _ := jobstest.Open(b, sqlstoretest.NewURL(b, d), jobs.Config{Workers: workers})
	logger := slog.New(slog.DiscardHandler)
	if mailer == nil {
		mailer = mail.NewDev(logger)
	}
	svc, err := accounts.NewService(ctx, db, password.NewHasher(p, 1), mailer, accounts.DefaultConfig(), logger)
	if err != nil {
		b.Fatal(err)
	}
	river.AddWorker(workers, &accounts.CodeEmailWorker{Service: svc})
	return svc
}

func paramsName(p password.Params) string {
	return fmt.Sprintf("argon2id-m%d-t%d-p%d", p.MemoryKiB, p.Iterations, p.Parallelism)
}

func BenchmarkSignup(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		for _, p := range []password.Params{password.DefaultParams(), cheapParams} {
			b.Run(string(d)+"/"+paramsName(p), func(b *testing.B) {
				svc := newBenchService(b, d, p, nil)
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					if _, err := svc.Signup(ctx, fmt.Sprintf("bench%d@example.com", i), "Bench-Pass-1", "", accounts.Language{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(p.MemoryKiB), "argon2-KiB")
			})
		}
	}
}

// codeCatcher is a mailer that keeps the code of each email instead of
// sending it, so the benchmark can enter it.
type codeCatcher struct {
	mu    sync.Mutex
	codes map[string]string
}

func (c *codeCatcher) Send(_ context.Context, m mail.Message) error {
	code, ok := mailtest.ExtractCode(m.Text)
	if !ok {
		return fmt.Errorf("no code in the email to %s", m.To)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.codes[m.To] = code
	return nil
}

func BenchmarkVerify(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			catcher := &codeCatcher{codes: map[string]string{}}
			// The password cost does not enter verify; set-up uses the cheap one.
			svc := newBenchService(b, d, cheapParams, catcher)
			ctx := context.Background()
			// One unverified account with a live code per iteration, made
			// before the clock starts.
			emails := make([]string, b.N)
			for i := range emails {
				emails[i] = fmt.Sprintf("verify%d@example.com", i)
				if _, err := svc.Signup(ctx, emails[i], "Bench-Pass-1", "", accounts.Language{}); err != nil {
					b.Fatal(err)
				}
				if err := svc.ResendVerification(ctx, emails[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := svc.VerifyEmail(ctx, emails[i], catcher.codes[emails[i]]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
