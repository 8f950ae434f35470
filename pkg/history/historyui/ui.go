// Package historyui serves kubediff's timeline page: plain HTML, CSS and
// JavaScript embedded in the binary (no CDN, no build step), a client of
// the history API (pkg/historyapi) with the same access rules. Its URLs
// are relative, so it works behind a path prefix.
package historyui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// policy lets the page load only its own files and call only its own
// origin: a value from the cluster can never run as script.
const policy = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Register adds the page (at /) and its assets to mux.
func Register(mux *http.ServeMux) {
	files, _ := fs.Sub(assets, "assets")
	static := http.StripPrefix("/assets/", http.FileServerFS(files))
	mux.Handle("GET /assets/", secured(static))
	mux.Handle("GET /{$}", secured(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, files, "index.html")
	})))
}

func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// Size is the bytes of the page and its assets, as a browser loads them
// (uncompressed).
func Size() int {
	n := 0
	_ = fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := assets.ReadFile(path); err == nil {
				n += len(b)
			}
		}
		return err
	})
	return n
}
