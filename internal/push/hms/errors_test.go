package hms

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Every answer decodeResponse can meet, including those the fake does not
// produce (proxy pages, bare statuses, odd partial successes).
func TestDecodeResponse(t *testing.T) {
	const tok = "dev-1"
	retry := http.Header{"Retry-After": {"7"}}
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		sent   bool
		kind   push.Kind
		reason string
		after  time.Duration
	}{
		{"success", 200, nil, `{"code":"80000000","msg":"Success","requestId":"1"}`, true, 0, "", 0},
		{"success code on a 500 is not a success", 500, nil, `{"code":"80000000"}`, false, push.Retryable, "80000000", 0},
		{"2xx without a code", 200, nil, `{}`, false, push.Other, "OK", 0},
		{"2xx not JSON", 200, nil, `ok`, false, push.Other, "OK", 0},
		{"partial: ours is illegal", 200, nil, `{"code":"80100000","msg":"{\"success\":0,\"failure\":1,\"illegal_tokens\":[\"dev-1\"]}"}`, false, push.DeadToken, "80100000", 0},
		{"partial: another is illegal, ours went", 200, nil, `{"code":"80100000","msg":"{\"success\":1,\"failure\":1,\"illegal_tokens\":[\"other\"]}"}`, true, 0, "", 0},
		{"partial: msg not JSON", 200, nil, `{"code":"80100000","msg":"Check Param Partial Success."}`, false, push.Other, "80100000", 0},
		{"partial: nothing sent, ours not named", 200, nil, `{"code":"80100000","msg":"{\"success\":0,\"failure\":1,\"illegal_tokens\":[]}"}`, false, push.Other, "80100000", 0},
		{"all tokens invalid", 400, nil, `{"code":"80300007","msg":"All the tokens are invalid"}`, false, push.DeadToken, "80300007", 0},
		{"all tokens invalid on a 200", 200, nil, `{"code":"80300007","msg":"All the tokens are invalid"}`, false, push.DeadToken, "80300007", 0},
		{"incorrect message structure", 400, nil, `{"code":"80100003","msg":"Illegal payload"}`, false, push.Other, "80100003", 0},
		{"parameter error", 400, nil, `{"code":"80100001","msg":"bad ttl"}`, false, push.Other, "80100001", 0},
		{"body too large", 400, nil, `{"code":"80300008","msg":"too large"}`, false, push.Other, "80300008", 0},
		{"too many tokens", 400, nil, `{"code":"80300010","msg":"too many"}`, false, push.Other, "80300010", 0},
		{"no permission", 403, nil, `{"code":"80300002","msg":"no permission"}`, false, push.Fatal, "80300002", 0},
		{"no high priority permission", 400, nil, `{"code":"80300011","msg":"no permission"}`, false, push.Fatal, "80300011", 0},
		{"oauth failed", 400, nil, `{"code":"80600003","msg":"Request OAuth service failed"}`, false, push.Fatal, "80600003", 0},
		{"token expired", 401, nil, `{"code":"80200003","msg":"Oauth Token expired."}`, false, push.Fatal, "80200003", 0},
		{"oauth error", 401, nil, `{"code":"80200001","msg":"Oauth authentication error"}`, false, push.Fatal, "80200001", 0},
		{"internal error", 500, retry, `{"code":"81000001","msg":"System internal error"}`, false, push.Retryable, "81000001", 7 * time.Second},
		{"flow control", 503, retry, `{"code":"","msg":"flow control"}`, false, push.Retryable, "Service Unavailable", 7 * time.Second},
		{"429", 429, http.Header{"Retry-After": {now.Add(time.Minute).Format(http.TimeFormat)}}, ``, false, push.Retryable, "Too Many Requests", time.Minute},
		{"html 502 from a proxy", 502, retry, `<html>Bad Gateway</html>`, false, push.Retryable, "Bad Gateway", 7 * time.Second},
		{"bare 401", 401, nil, ``, false, push.Fatal, "Unauthorized", 0},
		{"unknown code on a 400", 400, retry, `{"code":"80100016","msg":"sensitive"}`, false, push.Other, "80100016", 0},
		{"unknown code on a 503", 503, nil, `{"code":"89999999"}`, false, push.Retryable, "89999999", 0},
		{"retry-after ignored unless retryable", 400, retry, `{"code":"80300007"}`, false, push.DeadToken, "80300007", 0},
		{"odd status", 299, nil, ``, false, push.Other, "HTTP 299", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			err := decodeResponse(tt.status, h, []byte(tt.body), tok, now)
			if tt.sent {
				if err != nil {
					t.Fatalf("got %v, want sent", err)
				}
				return
			}
			pe, ok := errors.AsType[*push.Error](err)
			if !ok {
				t.Fatalf("got %v, want *push.Error", err)
			}
			if pe.Kind != tt.kind || pe.Reason != tt.reason || pe.RetryAfter != tt.after || pe.Status != tt.status || pe.Provider != "hms" {
				t.Fatalf("got %+v, want kind %v reason %q after %v", pe, tt.kind, tt.reason, tt.after)
			}
		})
	}
}

// FuzzDecodeResponse: whatever comes back, the answer is nil only for a
// 2xx saying success, and otherwise a complete *push.Error; nothing panics.
func FuzzDecodeResponse(f *testing.F) {
	f.Add(200, `{"code":"80000000","msg":"Success"}`, "", "t")
	f.Add(200, `{"code":"80100000","msg":"{\"success\":0,\"failure\":1,\"illegal_tokens\":[\"t\"]}"}`, "", "t")
	f.Add(200, `{"code":"80100000","msg":"{\"success\":1,\"illegal_tokens\":null}"}`, "", "t")
	f.Add(400, `{"code":"80300007"}`, "", "t")
	f.Add(503, `<html>`, "120", "t")
	f.Add(500, `{"code":81000001}`, "Wed, 21 Oct 2015 07:28:00 GMT", "")
	f.Fuzz(func(t *testing.T, status int, body, retryAfter, token string) {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		err := decodeResponse(status, h, []byte(body), token, now)
		if err == nil {
			var a answer
			_ = json.Unmarshal([]byte(body), &a)
			if status < 200 || status > 299 || (a.Code != codeSuccess && a.Code != codePartialSuccess) {
				t.Fatalf("sent for status %d body %q", status, body)
			}
			return
		}
		pe, ok := errors.AsType[*push.Error](err)
		if !ok {
			t.Fatalf("%T is not *push.Error", err)
		}
		if pe.Provider != "hms" || pe.Reason == "" || pe.Kind == push.Sent || pe.Status != status {
			t.Fatalf("incomplete error %+v", pe)
		}
		if pe.RetryAfter < 0 || (pe.RetryAfter > 0 && pe.Kind != push.Retryable) {
			t.Fatalf("retry-after %v on %v", pe.RetryAfter, pe.Kind)
		}
	})
}
