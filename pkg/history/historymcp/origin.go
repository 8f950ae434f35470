package historymcp

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// sameOriginOnly refuses, 403, a request a web page of another origin
// sends: the MCP spec (streamable HTTP, security warning) says a server
// MUST validate Origin, or a page the user visits could reach the server
// through their browser (DNS rebinding). A request without Origin comes
// from no browser (an assistant's host, curl) and passes; a browser's
// passes only from the address it called, where kubediff serves its own
// page.
func sameOriginOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !isOriginOf(origin, r.Host) {
			http.Error(w, fmt.Sprintf("forbidden: a page of origin %q may not call this server's MCP (only its own origin, or no Origin, may)", origin), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isOriginOf says whether origin (scheme://host[:port]) names host, the
// address the request was sent to.
func isOriginOf(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Host, host)
}
