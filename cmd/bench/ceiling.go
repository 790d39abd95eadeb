package main

// The bare ceilings: the least a program must do for each measure, written
// plainly with the same libraries Herald uses.
//
//   - users/me: a server (`bench ceiling-server`, a process of its own like
//     Herald) that verifies the EdDSA access token with golang-jwt (method,
//     issuer and expiry checked, key by kid) once and remembers it until it
//     expires, as each Herald replica does, selects the account's row by
//     primary key with pgxpool (MaxConns 32) and writes the JSON envelope.
//     With -verify-every-request it checks the signature on every request
//     (the ceiling before Herald remembered tokens).
//   - login: argon2id, each goroutine reusing its own memory, with Herald's default parameters in as many
//     goroutines as Herald runs hashes at once (HERALD_HASH_CONCURRENCY).
//   - broadcast: the same N FCM HTTP v1 requests (one JSON message each,
//     bearer token) from 64 goroutines over net/http with 64 kept-alive
//     HTTP/1.1 connections, to the same fake.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/herald-vpn/herald/internal/password/argon2id"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ceilingTable holds the rows the ceiling server reads; it lives in the
// run's PostgreSQL schema beside Herald's tables.
const ceilingTable = "bench_ceiling_users"

const ceilingDDL = `CREATE TABLE IF NOT EXISTS ` + ceilingTable + ` (
    id                TEXT PRIMARY KEY,
    email             TEXT NOT NULL,
    email_verified_at TIMESTAMPTZ,
    referral_code     TEXT NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    plan              TEXT NOT NULL,
    expires_at        TIMESTAMPTZ NOT NULL
)`

type ceilingUser struct {
	ID            string          `json:"id"`
	Email         string          `json:"email"`
	EmailVerified bool            `json:"emailVerified"`
	CreatedAt     time.Time       `json:"createdAt"`
	ReferralCode  string          `json:"referralCode"`
	Subscription  ceilingSubState `json:"subscription"`
}

type ceilingSubState struct {
	Plan      string    `json:"plan"`
	Status    string    `json:"status"`
	ExpiresAt time.Time `json:"expiresAt"`
}

type ceilingEnvelope struct {
	Success bool         `json:"success"`
	Data    *ceilingUser `json:"data,omitempty"`
	Error   *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// ceilingServerMain serves GET /api/v1/users/me the bare way.
func ceilingServerMain(args []string) error {
	fs := flag.NewFlagSet("ceiling-server", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	dbURL := fs.String("db", "", "PostgreSQL URL (with search_path of the run's schema)")
	jwksFile := fs.String("jwks", "", "JWK set file (Herald's HERALD_JWT_KEYS_FILE)")
	issuer := fs.String("issuer", "herald", "expected iss")
	maxConns := fs.Int("max-conns", 32, "pgxpool MaxConns")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (ends at SIGTERM)")
	verifyEvery := fs.Bool("verify-every-request", false, "check the token's signature on every request instead of once per token")
	_ = fs.Parse(args)

	keys, err := loadPublicKeys(*jwksFile)
	if err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(*dbURL)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(*maxConns)
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()

	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithIssuer(*issuer),
		jwt.WithExpirationRequired(),
	)
	keyFunc := func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, ok := keys[kid]
		if !ok {
			return nil, errors.New("unknown key")
		}
		return k, nil
	}
	fail := func(w http.ResponseWriter, status int, code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		e := ceilingEnvelope{}
		e.Error = &struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}{code, code}
		_ = json.NewEncoder(w).Encode(e)
	}
	verified := &verifiedTokens{m: make(map[string]verifiedToken)}
	query := `SELECT id, email, email_verified_at, referral_code, created_at, plan, expires_at FROM ` + ceilingTable + ` WHERE id = $1`

	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/users/me", func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			fail(w, http.StatusUnauthorized, "AUTH_REQUIRED")
			return
		}
		subject, ok := verified.subject(raw, time.Now())
		if !ok {
			var claims jwt.RegisteredClaims
			if _, err := parser.ParseWithClaims(raw, &claims, keyFunc); err != nil || claims.Subject == "" {
				fail(w, http.StatusUnauthorized, "TOKEN_INVALID")
				return
			}
			subject = claims.Subject
			if !*verifyEvery {
				verified.remember(raw, subject, claims.ExpiresAt.Time)
			}
		}
		var u ceilingUser
		var verifiedAt *time.Time
		err := pool.QueryRow(r.Context(), query, subject).Scan(&u.ID, &u.Email, &verifiedAt, &u.ReferralCode,
			&u.CreatedAt, &u.Subscription.Plan, &u.Subscription.ExpiresAt)
		if err != nil {
			fail(w, http.StatusNotFound, "USER_NOT_FOUND")
			return
		}
		u.EmailVerified = verifiedAt != nil
		u.CreatedAt = u.CreatedAt.UTC().Truncate(time.Second)
		u.Subscription.ExpiresAt = u.Subscription.ExpiresAt.UTC().Truncate(time.Second)
		u.Subscription.Status = "active"
		if !time.Now().Before(u.Subscription.ExpiresAt) {
			u.Subscription.Status = "expired"
		}
		body, err := json.Marshal(ceilingEnvelope{Success: true, Data: &u})
		if err != nil {
			fail(w, http.StatusInternalServerError, "INTERNAL_ERROR")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if *cpuProfile != "" {
		// For comparing with Herald's profile: run the server until
		// SIGTERM, then write the profile.
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		go func() {
			<-sig
			_ = srv.Close()
		}()
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	fmt.Fprintf(os.Stderr, "ceiling server on %s\n", *addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// verifiedTokens are the tokens whose signature and claims were checked,
// each until it expires: the least a server must keep to check a token
// once, as Herald's replicas do (internal/sessions).
type verifiedTokens struct {
	mu sync.RWMutex
	m  map[string]verifiedToken
}

type verifiedToken struct {
	subject string
	expires time.Time
}

func (v *verifiedTokens) subject(raw string, now time.Time) (string, bool) {
	v.mu.RLock()
	t, ok := v.m[raw]
	v.mu.RUnlock()
	if !ok || !now.Before(t.expires) {
		return "", false
	}
	return t.subject, true
}

func (v *verifiedTokens) remember(raw, subject string, expires time.Time) {
	v.mu.Lock()
	v.m[raw] = verifiedToken{subject: subject, expires: expires}
	v.mu.Unlock()
}

// loadPublicKeys reads the public keys of a JWK set by kid.
func loadPublicKeys(path string) (map[string]ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Keys []struct {
			Kid string `json:"kid"`
			X   string `json:"x"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := map[string]ed25519.PublicKey{}
	for _, k := range doc.Keys {
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("key %q: bad x", k.Kid)
		}
		out[k.Kid] = ed25519.PublicKey(x)
	}
	return out, nil
}

// argon2Op hashes a password with argon2id (16-byte salt, 32-byte key) in
// a working memory of its own, reused from hash to hash: the fastest way
// to run these hashes, and what Herald's password package does (its lanes
// one after another, on one core per hash). (x/crypto's
// IDKey allocates 64 MiB per hash and is about half as fast.)
func argon2Op(memKiB, iterations uint32, lanes uint8) op {
	salt := make([]byte, 16)
	pw := []byte("BenchPass123")
	mem := argon2id.NewMemory(memKiB)
	return func() (int, error) {
		_, _ = rand.Read(salt)
		_ = argon2id.Key(mem, pw, salt, iterations, memKiB, lanes, 32)
		return 200, nil
	}
}

// fcmMessage is the body of an FCM HTTP v1 send, as Herald writes it.
type fcmMessage struct {
	Message struct {
		Token        string            `json:"token"`
		Notification *fcmNotification  `json:"notification,omitempty"`
		Data         map[string]string `json:"data,omitempty"`
		Android      *struct {
			CollapseKey string `json:"collapse_key,omitempty"`
		} `json:"android,omitempty"`
		APNs *struct {
			Headers map[string]string `json:"headers,omitempty"`
		} `json:"apns,omitempty"`
	} `json:"message"`
}

type fcmNotification struct {
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
}

// sendResult is what a broadcast (Herald's or the bare sender's) did.
type sendResult struct {
	Sent, Failed int64
	Elapsed      time.Duration // first send to last answer
	PeakRSS      int64         // KiB, sampled VmRSS (Herald only)
	HWM          int64         // KiB, VmHWM at the end (Herald only)
	TimedOut     bool          // Herald's job did not finish in time: Sent and Elapsed are partial
	Note         string
}

func (r sendResult) PerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Sent) / r.Elapsed.Seconds()
}

// bareSend sends n FCM messages to the fake from workers goroutines, one
// token per device (tokenOf(i)), and times the first send to the last
// answer.
func bareSend(ctx context.Context, fakeURL, project string, n, workers int, tokenOf func(int) string) (sendResult, error) {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	client := &http.Client{Transport: &http.Transport{
		DialContext:         dialer.DialContext,
		MaxConnsPerHost:     workers,
		MaxIdleConns:        workers,
		MaxIdleConnsPerHost: workers,
		IdleConnTimeout:     90 * time.Second,
	}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()

	// The OAuth2 access token, once, as a real sender caches it.
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {"bench"}}
	resp, err := client.PostForm(fakeURL+"/token", form)
	if err != nil {
		return sendResult{}, err
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil {
		return sendResult{}, err
	}
	auth := "Bearer " + tok.AccessToken
	sendURL := fakeURL + "/v1/projects/" + url.PathEscape(project) + "/messages:send"
	collapse := "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" // a job id, as Herald sets it

	var next, sent, failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				var m fcmMessage
				m.Message.Token = tokenOf(i)
				m.Message.Notification = &fcmNotification{Title: broadcastSubject, Body: broadcastContent}
				m.Message.Data = map[string]string{"screen": "status"}
				m.Message.Android = &struct {
					CollapseKey string `json:"collapse_key,omitempty"`
				}{collapse}
				m.Message.APNs = &struct {
					Headers map[string]string `json:"headers,omitempty"`
				}{map[string]string{"apns-collapse-id": collapse}}
				body, err := json.Marshal(m)
				if err != nil {
					panic(err)
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, sendURL, bytes.NewReader(body))
				if err != nil {
					panic(err)
				}
				req.Header.Set("Content-Type", "application/json; charset=utf-8")
				req.Header.Set("Authorization", auth)
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					sent.Add(1)
				} else {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, resp.Status)
				}
			}
		}()
	}
	wg.Wait()
	res := sendResult{Sent: sent.Load(), Failed: failed.Load(), Elapsed: time.Since(start)}
	if e, _ := firstErr.Load().(string); e != "" {
		res.Note = "first failure: " + e
	}
	return res, ctx.Err()
}
