package rest

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
)

// FuzzLastEventID reads Last-Event-ID headers as the broadcast event
// stream does: a refusal is a 400 VALIDATION_ERROR naming the header; an
// empty header means "nothing yet" (-1); anything accepted is a
// non-negative version, and every id the stream writes (a version) reads
// back as itself.
func FuzzLastEventID(f *testing.F) {
	for _, seed := range []struct {
		header  string
		version int64
	}{
		{"12", 12}, {"", 0}, {" 7 ", 7}, {"0", 9223372036854775807}, {"-1", 1}, {"+5", 5}, {"007", 7},
		{"9223372036854775808", 0}, {"1e3", 1000}, {"0x10", 16}, {"12\x00", 12}, {"\xff", 1}, {"１２", 12},
	} {
		f.Add(seed.header, seed.version)
	}
	f.Fuzz(func(t *testing.T, header string, version int64) {
		after, err := lastEventID(header)
		if err != nil {
			ae := apperr.As(err)
			if ae.Code != apperr.ValidationError || ae.Status() != http.StatusBadRequest || ae.Details["field"] != "Last-Event-ID" {
				t.Fatalf("Last-Event-ID %q refused with %v (status %d), want a 400 VALIDATION_ERROR naming the header", header, err, ae.Status())
			}
		} else {
			blank := strings.TrimSpace(header) == ""
			if blank != (after == -1) || after < -1 {
				t.Fatalf("Last-Event-ID %q read as %d", header, after)
			}
			if !blank {
				if n, err := strconv.ParseInt(strings.TrimSpace(header), 10, 64); err != nil || n != after {
					t.Fatalf("Last-Event-ID %q read as %d, not its value", header, after)
				}
			}
		}
		if version >= 0 {
			if got, err := lastEventID(strconv.FormatInt(version, 10)); err != nil || got != version {
				t.Fatalf("the stream's id %d read back as %d (%v)", version, got, err)
			}
		}
	})
}
