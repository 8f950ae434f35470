package historyui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
)

// keyCookie holds the key a local page was opened with.
const keyCookie = "kubediff-ui-key"

// Local guards a page served on this machine for one person (`kubediff
// ui`): the API behind it carries their credentials, or reads their state
// dir, so other users of the machine must not reach it through the port.
// The URL printed holds a random key; opening it sets a cookie, and every
// other request needs that cookie, as Jupyter does.
type Local struct {
	key  string
	next http.Handler
}

// NewLocal guards next with a new random key.
func NewLocal(next http.Handler) *Local {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return &Local{key: hex.EncodeToString(b), next: next}
}

// OpenPath is the path that lets a browser in: print it with the address.
func (l *Local) OpenPath() string { return "/open?key=" + l.key }

func (l *Local) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/open" {
		if !l.matches(r.URL.Query().Get("key")) {
			http.Error(w, "wrong key: open the URL kubediff ui printed", http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: keyCookie, Value: l.key, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if c, err := r.Cookie(keyCookie); err != nil || !l.matches(c.Value) {
		http.Error(w, "open the URL kubediff ui printed (it holds this page's key)", http.StatusForbidden)
		return
	}
	l.next.ServeHTTP(w, r)
}

func (l *Local) matches(key string) bool {
	return subtle.ConstantTimeCompare([]byte(key), []byte(l.key)) == 1
}
