package rest

import (
	"net/http"
	"strconv"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/view"
)

// What the operator console reads besides the rest of the API: the
// overview, bans, subscribers and message previews.

// AdminOverview is GET /api/v1/admin/overview.
func (h *Handlers) AdminOverview() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		o, err := h.Overview.Get(r.Context())
		if err != nil {
			return nil, err
		}
		return view.NewAdminOverview(o), nil
	})
}

// pageArgs reads a listing's first (a whole number; 0 when absent) and
// after.
func pageArgs(r *http.Request) (first int, after string, err error) {
	q := r.URL.Query()
	if s := q.Get("first"); s != "" {
		if first, err = strconv.Atoi(s); err != nil {
			return 0, "", apperr.Invalid("first", "a whole number", s)
		}
	}
	return first, q.Get("after"), nil
}

// ListBans is GET /api/v1/admin/bans?first=&after=.
func (h *Handlers) ListBans() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		first, after, err := pageArgs(r)
		if err != nil {
			return nil, err
		}
		page, err := h.Bans.List(r.Context(), first, after)
		if err != nil {
			return nil, err
		}
		return listPage(page, view.NewBan), nil
	})
}

// addBanBody is the body of AddBan.
type addBanBody struct {
	IP     string `json:"ip"`
	Reason string `json:"reason"`
}

// AddBan is POST /api/v1/admin/bans (banAddress): 201 with the ban, the
// one already there when the address was banned.
func (h *Handlers) AddBan() http.HandlerFunc {
	return handle(http.StatusCreated, func(r *http.Request, in addBanBody) (any, error) {
		b, err := h.Bans.Add(r.Context(), in.IP, in.Reason)
		if err != nil {
			return nil, err
		}
		return view.NewBan(b), nil
	})
}

// LiftBan is DELETE /api/v1/admin/bans/{ip} (liftBan); an IPv6 /64 is
// written with its slash escaped (2001:db8::%2F64).
func (h *Handlers) LiftBan() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		ip, err := h.Bans.Lift(r.Context(), r.PathValue("ip"))
		if err != nil {
			return nil, err
		}
		return view.BanLifted{IP: ip, Lifted: true}, nil
	})
}

// MessengerSubscribers is GET /api/v1/messenger/subscribers?status=&first=&after=.
func (h *Handlers) MessengerSubscribers() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		first, after, err := pageArgs(r)
		if err != nil {
			return nil, err
		}
		page, err := h.Messenger.Subscribers(r.Context(), r.URL.Query().Get("status"), first, after)
		if err != nil {
			return nil, err
		}
		return listPage(page, view.NewMessengerSubscriber), nil
	})
}

// messengerPreviewBody is the body of MessengerPreview.
type messengerPreviewBody struct {
	Message string `json:"message"`
}

// MessengerPreview is POST /api/v1/messenger/preview (messengerPreview).
func (h *Handlers) MessengerPreview() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in messengerPreviewBody) (any, error) {
		p, err := h.Messenger.Preview(in.Message)
		if err != nil {
			return nil, err
		}
		return view.NewMessengerPreview(p), nil
	})
}
