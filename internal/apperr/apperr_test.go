package apperr

import (
	"net/http"
	"os"
	"testing"
	"time"
)

func TestSpecStatuses(t *testing.T) {
	cases := map[Code]int{
		AuthRequired: 401, TokenExpired: 401, TokenInvalid: 401, InsufficientPermissions: 403,
		ValidationError: 400, InvalidEmail: 422, WeakPassword: 422, UserNotFound: 404, ServerNotFound: 404,
		DeviceNotFound: 404, SubscriptionNotFound: 404, EmailAlreadyExists: 409, EmailExists: 409,
		DeviceLimitReached: 409, RateLimited: 429, QuotaExceeded: 429, Internal: 500, ServiceUnavailable: 503,
		UpstreamError: 502, VPNConnectionFailed: 500, DNSResolutionFailed: 500, PaymentFailed: 400,
		SubscriptionExpired: 403, InsufficientBalance: 400, EmailNotFound: 400, AlreadyVerified: 400,
		EmailDeliveryFailed: 502, InvalidPushToken: 422, InvalidInput: 400,
	}
	for code, want := range cases {
		if got := Lookup(code).Status; got != want {
			t.Errorf("%s: status %d, want %d", code, got, want)
		}
	}
}

func TestRetryable(t *testing.T) {
	for status, want := range map[int]bool{429: true, 500: true, 502: true, 503: true, 400: false, 401: false, 403: false, 404: false, 409: false, 422: false} {
		if Retryable(status) != want {
			t.Errorf("Retryable(%d) = %v", status, !want)
		}
	}
}

func TestUnknownCodeIsInternal(t *testing.T) {
	if Lookup("NO_SUCH_CODE").Status != http.StatusInternalServerError {
		t.Fatal("unknown code not internal")
	}
	if As(os.ErrNotExist).Code != Internal {
		t.Fatal("a plain error must become INTERNAL_ERROR")
	}
}

func TestWithCopies(t *testing.T) {
	a := New(RateLimited).With("retryAfter", 5)
	b := a.With("tier", "auth")
	if _, ok := a.Details["tier"]; ok || b.Details["retryAfter"] != 5 {
		t.Fatal("With must copy, not mutate")
	}
}

func TestRetryAfterAndInvalid(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 1, 300 * time.Millisecond: 1, time.Second: 1, 1500 * time.Millisecond: 2, time.Minute: 60} {
		if got := WaitSeconds(d); got != want {
			t.Errorf("WaitSeconds(%v) = %d, want %d", d, got, want)
		}
	}
	e := New(RateLimited).WithRetryAfter(7)
	if e.RetryAfterSeconds != 7 || e.Details["retryAfter"] != 7 {
		t.Fatalf("%+v", e)
	}
	v := Invalid("email", "type string", "number")
	if v.Code != ValidationError || v.Details["field"] != "email" || v.Details["constraint"] != "type string" || v.Details["received"] != "number" {
		t.Fatalf("%+v", v)
	}
}
