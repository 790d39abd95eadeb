package accounts

import (
	"bytes"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
)

func TestCheckCode(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	code := func(hash string, expiresIn time.Duration, left int) *StoredCode {
		return &StoredCode{Hash: []byte(hash), ExpiresAt: now.Add(expiresIn), AttemptsLeft: left}
	}
	cases := []struct {
		name     string
		live     *StoredCode
		pending  *StoredCode
		typed    string
		want     CodeCheck
		wantCode apperr.Code // "" for a match
		wantLeft any         // attemptsRemaining detail
	}{
		{"fresh and right", code("a", time.Minute, 5), nil, "a", CodeCheck{CodeMatched, 5}, "", nil},
		{"wrong spends an attempt", code("a", time.Minute, 5), nil, "b", CodeCheck{CodeWrong, 4}, apperr.InvalidVerificationCode, 4},
		{"last wrong attempt kills it", code("a", time.Minute, 1), nil, "b", CodeCheck{CodeWrong, 0}, apperr.InvalidVerificationCode, 0},
		{"killed after 5 refuses even the right code", code("a", time.Minute, 0), nil, "a", CodeCheck{CodeExhausted, 0}, apperr.InvalidVerificationCode, 0},
		{"expired", code("a", 0, 5), nil, "a", CodeCheck{CodeExpired, 5}, apperr.VerificationCodeExpired, nil},
		{"expired and wrong changes nothing", code("a", -time.Second, 5), nil, "b", CodeCheck{CodeExpired, 5}, apperr.VerificationCodeExpired, nil},
		{"no code", nil, nil, "a", CodeCheck{CodeMissing, 0}, apperr.InvalidVerificationCode, 0},
		{"superseded: the older code is wrong", code("new", time.Minute, 5), nil, "old", CodeCheck{CodeWrong, 4}, apperr.InvalidVerificationCode, 4},
		{"pending matches before it is recorded", code("old", time.Minute, 5), code("new", time.Minute, 0), "new", CodeCheck{CodeMatched, 0}, "", nil},
		{"pending matches with no live code", nil, code("new", time.Minute, 0), "new", CodeCheck{CodeMatched, 0}, "", nil},
		{"pending matches while the live one is exhausted", code("old", time.Minute, 0), code("new", time.Minute, 0), "new", CodeCheck{CodeMatched, 0}, "", nil},
		{"live still works while another is pending", code("old", time.Minute, 5), code("new", time.Minute, 0), "old", CodeCheck{CodeMatched, 5}, "", nil},
		{"expired pending never matches", code("old", time.Minute, 5), code("new", -time.Second, 0), "new", CodeCheck{CodeWrong, 4}, apperr.InvalidVerificationCode, 4},
		{"pending alone, typed wrong", nil, code("new", time.Minute, 0), "x", CodeCheck{CodeMissing, 0}, apperr.InvalidVerificationCode, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CheckCode(CodeState{Now: now, Live: c.live, Pending: c.pending}, func(h []byte) bool { return bytes.Equal(h, []byte(c.typed)) })
			if got != c.want {
				t.Fatalf("CheckCode = %+v, want %+v", got, c.want)
			}
			err := got.Err()
			if c.wantCode == "" {
				if err != nil {
					t.Fatalf("a match gave %v", err)
				}
				return
			}
			ae := apperr.As(err)
			if ae.Code != c.wantCode || ae.Details["attemptsRemaining"] != c.wantLeft {
				t.Fatalf("error %s %v, want %s with attemptsRemaining %v", ae.Code, ae.Details, c.wantCode, c.wantLeft)
			}
		})
	}
}
