package rest

import (
	"context"
	"net/http"
	"strconv"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/view"
)

// MySecurityLog is GET /api/v1/users/me/security-log.
func (h *Handlers) MySecurityLog() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return h.securityLog(r, auth.Caller(r.Context()).AccountID, false)
	})
}

// UserSecurityLog is GET /api/v1/admin/users/{id}/security-log.
func (h *Handlers) UserSecurityLog() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return h.securityLog(r, r.PathValue("id"), false)
	})
}

// OperatorSecurityLog is GET /api/v1/admin/security-log: the operators'
// log.
func (h *Handlers) OperatorSecurityLog() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return h.securityLog(r, "", true)
	})
}

// securityLog answers a page of an account's log, or of the operators'
// (?first=&after=).
func (h *Handlers) securityLog(r *http.Request, accountID string, operators bool) (any, error) {
	first := 0
	if v := r.URL.Query().Get("first"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, apperr.Invalid("first", "a whole number between 1 and "+strconv.Itoa(securitylog.MaxPage), v)
		}
		first = n
	}
	read := h.Accounts.SecurityEvents
	if operators {
		read = func(ctx context.Context, _ string, first int, after string) ([]securitylog.Event, bool, error) {
			return h.Accounts.OperatorSecurityEvents(ctx, first, after)
		}
	}
	page, more, err := read(r.Context(), accountID, first, r.URL.Query().Get("after"))
	if err != nil {
		return nil, err
	}
	end := ""
	if len(page) > 0 {
		end = page[len(page)-1].ID
	}
	return view.NewPage(page, view.NewSecurityEvent, end, more), nil
}
