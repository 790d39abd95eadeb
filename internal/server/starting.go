package server

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
)

// Starting is what the listener serves while the server waits for its
// database at start (and migrates it): alive on /healthz (a restart would
// not help), unready on /readyz, and every other route 503
// SERVICE_UNAVAILABLE with Retry-After in the usual envelope, so clients
// and load balancers retry instead of meeting a closed port. Requests get
// their ID and log line as they will once the server runs.
func Starting(logger *slog.Logger, trustedProxies []netip.Prefix) http.Handler {
	retryAfter := strconv.Itoa(api.UnavailableRetryAfter)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", retryAfter)
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":"unavailable","database":"unreachable"}` + "\n"))
	})
	refusal := apperr.Newf(apperr.ServiceUnavailable, "The server is starting: its database is not reachable yet; try again shortly.").WithRetryAfter(api.UnavailableRetryAfter)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, r, refusal)
	})
	return withRequestInfo(Deps{Logger: logger, TrustedProxies: trustedProxies}, mux)
}
