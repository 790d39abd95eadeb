package main

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func TestWebhookReceiver(t *testing.T) {
	r, err := startWebhookReceiver(0.5)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r.wh = wh
	post := func(id string, body []byte, sign bool) int {
		req, _ := http.NewRequest("POST", "http://"+r.addr+"/hook", bytes.NewReader(body))
		now := time.Now()
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		sig := "v1,bm90IGEgc2lnbmF0dXJl"
		if sign {
			if sig, err = wh.Sign(id, now, body); err != nil {
				t.Fatal(err)
			}
		}
		req.Header.Set("webhook-signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	body := []byte(`{"type":"device.registered","timestamp":"2026-11-28T00:00:00Z","data":{"deviceId":"d1","userId":"u1"}}`)
	if got := post("msg_1", body, false); got != http.StatusBadRequest {
		t.Errorf("a bad signature was answered %d, want 400", got)
	}
	// Attempts of one event until one is answered 2xx: with a share of
	// 0.5, a few; each failure is counted as injected.
	var statuses []int
	for len(statuses) < 20 {
		s := post("msg_2", body, true)
		statuses = append(statuses, s)
		if s == http.StatusNoContent {
			break
		}
		if s != http.StatusInternalServerError {
			t.Fatalf("attempt answered %d", s)
		}
	}
	total, ok, injected, bad := r.counts()
	if ok != 1 || bad != 1 || injected != int64(len(statuses)-1) || total != int64(len(statuses)+1) {
		t.Errorf("counts: total %d ok %d injected %d bad %d after %v", total, ok, injected, bad, statuses)
	}
	missing := r.waitAll(context.Background(), map[string]string{"device.registered:d1": "d1", "device.registered:d2": "d2"}, time.Now())
	if len(missing) != 1 || missing[0] != "d2" {
		t.Errorf("missing = %v, want [d2]", missing)
	}
}
