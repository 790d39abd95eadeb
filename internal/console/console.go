// Package console serves the operator console: a single-page web app
// embedded in the binary, same-origin with the API it calls. It holds no
// state and no credentials; the page signs in through the public API.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// Path is where the console lives.
const Path = "/console/"

// securityHeaders are sent with every console answer. The policy allows
// only the console's own files (no inline script or style, no eval) and
// connections to its own origin (the API, WebSocket and SSE), and forbids
// framing.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"Referrer-Policy":              "no-referrer",
	"X-Content-Type-Options":       "nosniff",
	"X-Frame-Options":              "DENY",
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
}

// Handler serves the console under Path; /console redirects there. Unknown
// paths under Path answer 404 (the app routes with the URL fragment, so
// every page is index.html).
func Handler() http.Handler {
	files, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory is fixed at build time
	}
	static := http.StripPrefix(Path, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == strings.TrimSuffix(Path, "/") {
			http.Redirect(w, r, Path, http.StatusMovedPermanently)
			return
		}
		// The page is small and changes with the binary: always revalidate.
		w.Header().Set("Cache-Control", "no-cache")
		static.ServeHTTP(w, r)
	})
}
