package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/view"
)

// VAPIDPublicKey is GET /api/v1/push/vapid-public-key: the Web Push
// application server key, public; NOT_FOUND when Web Push is not
// configured.
func (h *Handlers) VAPIDPublicKey() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		if h.Services.VAPIDPublicKey == "" {
			return nil, apperr.Newf(apperr.NotFound, "Web Push is not configured on this server.")
		}
		return view.VAPIDPublicKey{PublicKey: h.Services.VAPIDPublicKey}, nil
	})
}
