package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/apidoc"
	"github.com/herald-vpn/herald/internal/api"
)

// OpenAPI is GET /api/v1/openapi.json: apidoc/openapi.yaml, the description of
// this door, as JSON. It is converted once, when the route is built; the
// answer is the document itself, not wrapped in the envelope.
func (h *Handlers) OpenAPI() http.HandlerFunc {
	doc, err := apidoc.JSON()
	return func(w http.ResponseWriter, r *http.Request) {
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		api.WriteRawJSON(w, http.StatusOK, doc)
	}
}
