// Package pwned asks a Pwned Passwords range server (Have I Been Pwned's
// k-anonymity API) whether a password has appeared in a breach. Only the
// first five hex digits of the password's SHA-1 leave the process; the
// server answers every suffix it knows under that prefix, padded with
// decoys (count 0) so that the answer's size says nothing either.
package pwned

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is where the range server is and how long to trust its answers.
type Config struct {
	// URL is the API's base; /range/{prefix} is appended.
	URL string
	// Timeout bounds one range request (default 2 s). A slower server
	// fails open: the password is not called breached.
	Timeout time.Duration
	// CacheTTL is how long a range is kept (default 1 h); CacheSize how
	// many ranges at most (default 4096, about 2 MiB of bodies at most
	// as counts, since only the matching suffixes are kept).
	CacheTTL  time.Duration
	CacheSize int
	// Client sends the requests (default a client with Timeout).
	Client *http.Client
	// Now is the clock of the cache (default time.Now).
	Now func() time.Time
}

// Checker answers Breached. It is safe for concurrent use.
type Checker struct {
	cfg    Config
	client *http.Client
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]cachedRange
}

// cachedRange is one prefix's answer: the suffixes with a count above
// zero (decoys are dropped), and when it was fetched.
type cachedRange struct {
	suffixes map[string]int
	at       time.Time
}

// New returns a checker of cfg.URL.
func New(cfg Config) *Checker {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = time.Hour
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 4096
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{Timeout: cfg.Timeout}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Checker{cfg: cfg, client: client, now: now, cache: map[string]cachedRange{}}
}

// Breached reports how many times plain has been seen in breaches (0: not
// seen). An error means the server could not answer; callers fail open.
func (c *Checker) Breached(ctx context.Context, plain string) (int, error) {
	sum := sha1.Sum([]byte(plain))
	digest := strings.ToUpper(hex.EncodeToString(sum[:]))
	prefix, suffix := digest[:5], digest[5:]
	if r, ok := c.cached(prefix); ok {
		return r.suffixes[suffix], nil
	}
	suffixes, err := c.fetch(ctx, prefix)
	if err != nil {
		return 0, err
	}
	c.store(prefix, suffixes)
	return suffixes[suffix], nil
}

func (c *Checker) cached(prefix string) (cachedRange, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.cache[prefix]
	if !ok || c.now().Sub(r.at) >= c.cfg.CacheTTL {
		return cachedRange{}, false
	}
	return r, true
}

func (c *Checker) store(prefix string, suffixes map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cache) >= c.cfg.CacheSize {
		// Full: drop the expired ranges, and when none is, any one; the
		// cache only spares the server, it is never needed for an answer.
		now := c.now()
		for k, r := range c.cache {
			if now.Sub(r.at) >= c.cfg.CacheTTL {
				delete(c.cache, k)
			}
		}
		for k := range c.cache {
			if len(c.cache) < c.cfg.CacheSize {
				break
			}
			delete(c.cache, k)
		}
	}
	c.cache[prefix] = cachedRange{suffixes: suffixes, at: c.now()}
}

// maxRangeBody bounds what one range answer may be (real ones are about
// 30 KiB, padded ones under 40 KiB).
const maxRangeBody = 1 << 20

func (c *Checker) fetch(ctx context.Context, prefix string) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.cfg.URL, "/")+"/range/"+prefix, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Add-Padding", "true")
	req.Header.Set("User-Agent", "Herald")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("pwned passwords range %s: %w", prefix, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("pwned passwords range %s: status %d", prefix, resp.StatusCode)
	}
	return ParseRange(io.LimitReader(resp.Body, maxRangeBody))
}

// ParseRange reads a range answer: lines of SUFFIX:COUNT, the suffix 35
// hex digits. It keeps the suffixes (upper case) seen at least once;
// padding lines (count 0) are dropped. A malformed line is an error, so a
// wrong server is noticed rather than read as "never breached".
func ParseRange(r io.Reader) (map[string]int, error) {
	out := map[string]int{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		suffix, count, ok := strings.Cut(text, ":")
		if !ok || len(suffix) != 35 || !isHex(suffix) {
			return nil, fmt.Errorf("pwned passwords range: line %d is not SUFFIX:COUNT", line)
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("pwned passwords range: line %d has no count", line)
		}
		if n > 0 {
			out[strings.ToUpper(suffix)] = n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errors.Join(errors.New("pwned passwords range: read"), err)
	}
	return out, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// Check asks the server for one range and reads it, as `herald check`
// does: it proves the URL answers in the API's format.
func (c *Checker) Check(ctx context.Context) (int, error) {
	suffixes, err := c.fetch(ctx, "00000")
	return len(suffixes), err
}
