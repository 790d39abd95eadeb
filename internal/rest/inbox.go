package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/view"
)

// MyInbox is GET /api/v1/users/me/inbox (?first=&after=&archived=&unread=).
func (h *Handlers) MyInbox() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return h.inboxPage(r, auth.Caller(r.Context()).AccountID, h.Inbox.List)
	})
}

// UserInbox is GET /api/v1/admin/users/{id}/inbox: the same listing of a
// user's inbox, as an operator reads it (USER_NOT_FOUND for an unknown
// user).
func (h *Handlers) UserInbox() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return h.inboxPage(r, r.PathValue("id"), h.Inbox.ListOf)
	})
}

// inboxPage answers a page of accountID's inbox read by list, from the
// query's first, after, archived and unread.
func (h *Handlers) inboxPage(r *http.Request, accountID string, list func(context.Context, string, inbox.Filter, int, string) (inbox.Page, error)) (any, error) {
	q := r.URL.Query()
	first := 0
	if v := q.Get("first"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, apperr.Invalid("first", "a whole number between 1 and "+strconv.Itoa(inbox.MaxPageSize), v)
		}
		first = n
	}
	var f inbox.Filter
	var err error
	if f.Archived, err = queryBool(q.Get("archived"), "archived"); err != nil {
		return nil, err
	}
	if f.UnreadOnly, err = queryBool(q.Get("unread"), "unread"); err != nil {
		return nil, err
	}
	p, err := list(r.Context(), accountID, f, first, q.Get("after"))
	if err != nil {
		return nil, err
	}
	return view.NewPage(p.Items, view.NewInboxItem, p.EndCursor, p.HasNextPage), nil
}

// queryBool reads a true/false query parameter ("" is false).
func queryBool(v, field string) (bool, error) {
	switch v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, apperr.Invalid(field, "true or false", v)
}

// MyInboxCounts is GET /api/v1/users/me/inbox/counts.
func (h *Handlers) MyInboxCounts() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		c, err := h.Inbox.Counts(r.Context(), auth.Caller(r.Context()).AccountID)
		if err != nil {
			return nil, err
		}
		return view.NewInboxCounts(c), nil
	})
}

// UserInboxCounts is GET /api/v1/admin/users/{id}/inbox/counts.
func (h *Handlers) UserInboxCounts() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		c, err := h.Inbox.CountsOf(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return view.NewInboxCounts(c), nil
	})
}

// WithdrawInboxItem is POST /api/v1/admin/users/{id}/inbox/{itemId}/archive:
// an operator's archive of one of the user's items (archived, not marked
// seen); the item.
func (h *Handlers) WithdrawInboxItem() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		it, err := h.Inbox.Withdraw(r.Context(), r.PathValue("id"), r.PathValue("itemId"))
		if err != nil {
			return nil, err
		}
		return view.NewInboxItem(it), nil
	})
}

// WithdrawInbox is POST /api/v1/admin/users/{id}/inbox/archive with {} or
// {"upTo":"<id>"}: an operator's archive of every item of the user's
// inbox (up to upTo); the counts after it.
func (h *Handlers) WithdrawInbox() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in inboxMarkAllBody) (any, error) {
		c, err := h.Inbox.WithdrawAll(r.Context(), r.PathValue("id"), deref(in.UpTo))
		if err != nil {
			return nil, err
		}
		return view.NewInboxCounts(c), nil
	})
}

// MarkInboxItem is POST /api/v1/users/me/inbox/{id}/seen, /read and
// /archive: the item, marked.
func (h *Handlers) MarkInboxItem(m inbox.Mark) http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		it, err := h.Inbox.Mark(r.Context(), auth.Caller(r.Context()).AccountID, r.PathValue("id"), m)
		if err != nil {
			return nil, err
		}
		return view.NewInboxItem(it), nil
	})
}

// inboxMarkAllBody is the body of MarkInboxAll.
type inboxMarkAllBody struct {
	// UpTo marks only the items up to and including this one.
	UpTo *string `json:"upTo"`
}

// MarkInboxAll is POST /api/v1/users/me/inbox/seen, /read and /archive:
// every item (up to upTo) marked; the counts after it.
func (h *Handlers) MarkInboxAll(m inbox.Mark) http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in inboxMarkAllBody) (any, error) {
		c, err := h.Inbox.MarkAll(r.Context(), auth.Caller(r.Context()).AccountID, m, deref(in.UpTo))
		if err != nil {
			return nil, err
		}
		return view.NewInboxCounts(c), nil
	})
}

// MyInboxEvents is GET /api/v1/users/me/inbox/events: the caller's own
// inbox as Server-Sent Events named "inbox", each an InboxEvent: the
// counts first, then every item kept and every change of the counts, from
// any replica. The account is the credential's, never the request's.
// Bounded as BroadcastEvents is (caps, heartbeat re-check, expiry, longest
// duration). The events have no id: a reconnecting client gets the counts
// again and reads the list.
func (h *Handlers) MyInboxEvents() http.HandlerFunc {
	lim := h.Streams.withDefaults()
	var open limits.Slots // this replica's streams, per caller and per address
	return func(w http.ResponseWriter, r *http.Request) {
		release, err := takeStream(r, &open, lim)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		defer release()
		events, err := h.Inbox.Watch(r.Context(), auth.Caller(r.Context()).AccountID)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		stream(h, w, r, lim, events, func(w io.Writer, e inbox.Event) {
			data, _ := json.Marshal(view.NewInboxEvent(e))
			fmt.Fprintf(w, "event: inbox\ndata: %s\n\n", data)
		})
	}
}
