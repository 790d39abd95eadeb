package rest

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/view"
)

func (h *Handlers) userRecord(r accounts.Record) view.UserRecord {
	return view.NewUserRecord(r, h.Accounts.Now())
}

// optionalBool reads a true/false query parameter; nil when absent.
func optionalBool(r *http.Request, name string) (*bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil || (v != "true" && v != "false") {
		return nil, apperr.Invalid(name, "true or false", v)
	}
	return &b, nil
}

// ListUsers is GET /api/v1/admin/users: the admin search, or with email the one
// account of that address (a page of one or none).
func (h *Handlers) ListUsers() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		q := r.URL.Query()
		if email := q.Get("email"); email != "" {
			rec, err := h.Accounts.UserByEmail(r.Context(), email)
			var found []accounts.Record
			if err == nil {
				found = append(found, rec)
			} else if !apperr.Is(err, apperr.UserNotFound) {
				return nil, err
			}
			return view.NewPage(found, h.userRecord, "", false), nil
		}
		first := 0
		if v := q.Get("first"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, apperr.Invalid("first", "an integer", v)
			}
			first = n
		}
		verified, err := optionalBool(r, "verified")
		if err != nil {
			return nil, err
		}
		disabled, err := optionalBool(r, "disabled")
		if err != nil {
			return nil, err
		}
		guest, err := optionalBool(r, "guest")
		if err != nil {
			return nil, err
		}
		page, err := h.Accounts.Users(r.Context(), accounts.Search{Query: q.Get("query"), Plan: q.Get("plan"), Status: q.Get("status"), Verified: verified, Disabled: disabled, Guest: guest}, first, q.Get("after"))
		if err != nil {
			return nil, err
		}
		return view.NewPage(page.Users, h.userRecord, page.EndCursor, page.HasNextPage), nil
	})
}

// GetUser is GET /api/v1/admin/users/{id}.
func (h *Handlers) GetUser() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		ctx := r.Context()
		rec, err := h.Accounts.User(ctx, r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		list, err := h.Sessions.List(ctx, rec.ID)
		if err != nil {
			return nil, err
		}
		out := view.UserDetail{UserRecord: h.userRecord(rec), Sessions: view.All(list, func(s sessions.Session) view.Session { return view.NewSession(s, "") })}
		chat, found, err := h.Messenger.ChatOf(ctx, rec.ID)
		if err != nil {
			return nil, err
		}
		if found {
			c := view.NewMessengerSubscriber(chat)
			out.MessengerChat = &c
		}
		return out, nil
	})
}

// setSubscriptionBody is the body of SetSubscription.
type setSubscriptionBody struct {
	Plan      string     `json:"plan"`
	ExpiresAt *time.Time `json:"expiresAt"`
}

// SetSubscription is PUT /api/v1/admin/users/{id}/subscription, the billing
// hook: the same call twice is one change.
func (h *Handlers) SetSubscription() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in setSubscriptionBody) (any, error) {
		if err := api.Required("plan", in.Plan); err != nil {
			return nil, err
		}
		if in.ExpiresAt == nil {
			return nil, apperr.Invalid("expiresAt", "required", "missing")
		}
		id := r.PathValue("id")
		if _, err := h.Plans.SetPlan(r.Context(), id, in.Plan, *in.ExpiresAt); err != nil {
			return nil, err
		}
		rec, err := h.Accounts.User(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return h.userRecord(rec), nil
	})
}

// setUserLocaleBody is the body of SetUserLocale.
type setUserLocaleBody struct {
	Locale string `json:"locale"`
}

// SetUserLocale is PUT /api/v1/admin/users/{id}/locale: the language of
// the account's emails.
func (h *Handlers) SetUserLocale() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in setUserLocaleBody) (any, error) {
		id := r.PathValue("id")
		if err := h.Accounts.SetLocale(r.Context(), id, in.Locale); err != nil {
			return nil, err
		}
		rec, err := h.Accounts.User(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return h.userRecord(rec), nil
	})
}

// disableUserBody is the body of DisableUser.
type disableUserBody struct {
	Reason string `json:"reason"`
}

// DisableUser is POST /api/v1/admin/users/{id}/disable; the body, with a
// reason, is optional.
func (h *Handlers) DisableUser() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := api.ReadBody(w, r)
		var in disableUserBody
		if err == nil && strings.TrimSpace(string(body)) != "" {
			err = api.Unmarshal(body, &in)
		}
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		rec, err := h.Accounts.Disable(r.Context(), auth.Caller(r.Context()), r.PathValue("id"), in.Reason)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		api.WriteData(w, http.StatusOK, h.userRecord(rec))
	}
}

// EnableUser is POST /api/v1/admin/users/{id}/enable.
func (h *Handlers) EnableUser() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		rec, err := h.Accounts.Enable(r.Context(), auth.Caller(r.Context()), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return h.userRecord(rec), nil
	})
}

// RevokeUserSessions is DELETE /api/v1/admin/users/{id}/sessions.
func (h *Handlers) RevokeUserSessions() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("id")
		n, err := h.Sessions.RevokeAll(r.Context(), auth.Caller(r.Context()), id)
		if err != nil {
			return nil, err
		}
		return view.SessionsRevoked{UserID: id, Revoked: n}, nil
	})
}

// DeleteUser is DELETE /api/v1/admin/users/{id}.
func (h *Handlers) DeleteUser() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("id")
		if err := h.Accounts.Delete(r.Context(), auth.Caller(r.Context()), id); err != nil {
			return nil, err
		}
		return view.UserDeleted{UserID: id, Deleted: true}, nil
	})
}

// deleteMeBody is the body of DeleteMe.
type deleteMeBody struct {
	Password string `json:"password"`
}

// DeleteMe is POST /api/v1/users/me/delete: the caller deletes their own
// account, confirming with its password.
func (h *Handlers) DeleteMe() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in deleteMeBody) (any, error) {
		id := auth.Caller(r.Context()).AccountID
		if err := h.Accounts.DeleteOwn(r.Context(), auth.Caller(r.Context()), in.Password); err != nil {
			return nil, err
		}
		return view.UserDeleted{UserID: id, Deleted: true}, nil
	})
}

// setMyLocaleBody is the body of SetMyLocale.
type setMyLocaleBody struct {
	Locale string `json:"locale"`
}

// SetMyLocale is PUT /api/v1/users/me/locale: the language of the
// caller's emails, from the next one on.
func (h *Handlers) SetMyLocale() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in setMyLocaleBody) (any, error) {
		id := auth.Caller(r.Context()).AccountID
		if err := h.Accounts.SetLocale(r.Context(), id, in.Locale); err != nil {
			return nil, err
		}
		acct, err := h.Accounts.Profile(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return view.NewUser(acct, h.Accounts.Now()), nil
	})
}

// MySessions is GET /api/v1/users/me/sessions.
func (h *Handlers) MySessions() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		c := auth.Caller(r.Context())
		list, err := h.Sessions.List(r.Context(), c.AccountID)
		if err != nil {
			return nil, err
		}
		return view.All(list, func(s sessions.Session) view.Session { return view.NewSession(s, c.SessionID) }), nil
	})
}

// RevokeMySession is DELETE /api/v1/users/me/sessions/{id}.
func (h *Handlers) RevokeMySession() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("id")
		if err := h.Sessions.RevokeOwn(r.Context(), auth.Caller(r.Context()).AccountID, id); err != nil {
			return nil, err
		}
		return view.SessionRevoked{SessionID: id, Revoked: true}, nil
	})
}

// CreateMessengerLink is POST /api/v1/users/me/messenger-link: the
// caller's one-time Telegram link (messengerLinkUrl).
func (h *Handlers) CreateMessengerLink() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		link, err := h.Messenger.LinkURL(r.Context(), auth.Caller(r.Context()).AccountID)
		if err != nil {
			return nil, err
		}
		return view.NewMessengerLink(link), nil
	})
}

// DeleteMessengerLink is DELETE /api/v1/users/me/messenger-link
// (unlinkMessenger).
func (h *Handlers) DeleteMessengerLink() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		unlinked, err := h.Messenger.Unlink(r.Context(), auth.Caller(r.Context()).AccountID)
		if err != nil {
			return nil, err
		}
		return view.MessengerUnlinked{Unlinked: unlinked}, nil
	})
}
