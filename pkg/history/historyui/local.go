package historyui

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// CodeLifetime is how long a one-time code lets a browser in.
const CodeLifetime = 2 * time.Minute

// Local guards a page served on this machine for one person (`kubediff
// ui`): the API behind it carries their credentials, or reads their state
// dir, so other users of the machine must not reach it through the port.
//
// A browser gets in with a one-time code (OpenURL), which it trades for a
// cookie holding the session's secret; every other request needs that
// cookie. A code is used once and lives CodeLifetime, so a URL seen in a
// process list, a browser's history or a shell's is of no use later. The
// cookie is named after the port (browsers send 127.0.0.1's cookies to
// each of its ports, so two pages must not share a name), and a request
// must name the server in its Host header as loopback and this port: a
// page of another site, whose name was rebound to 127.0.0.1 (DNS
// rebinding), is refused.
type Local struct {
	next    http.Handler
	base    string // http://IP:PORT
	port    string
	hosts   map[string]bool // Host headers naming this server
	cookie  string
	session string
	now     func() time.Time

	mu    sync.Mutex
	codes map[string]time.Time // unused codes and when each expires
}

// NewLocal guards next, served at addr (the listener's address: a
// loopback IP and port).
func NewLocal(next http.Handler, addr string) (*Local, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	l := &Local{next: next, base: "http://" + net.JoinHostPort(ip.String(), port), port: port, cookie: "kubediff-ui-" + port, session: rand.Text() + rand.Text(),
		now: time.Now, codes: map[string]time.Time{}, hosts: map[string]bool{}}
	for _, h := range []string{"127.0.0.1", "localhost", "::1", host} {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			l.hosts[strings.ToLower(net.JoinHostPort(h, port))] = true
		}
	}
	return l, nil
}

// OpenURL returns a URL with a new one-time code that lets a browser in.
func (l *Local) OpenURL() string {
	code := rand.Text() + rand.Text()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for c, expires := range l.codes {
		if now.After(expires) {
			delete(l.codes, c)
		}
	}
	l.codes[code] = now.Add(CodeLifetime)
	return l.base + "/open?code=" + code
}

// ServeHTTP answers a request naming this server that holds the
// session's cookie, or trades a one-time code for it at /open.
func (l *Local) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !l.hosts[strings.ToLower(r.Host)] {
		http.Error(w, fmt.Sprintf("this page answers at %s only (Host %q is not this server)", l.base, r.Host), http.StatusForbidden)
		return
	}
	signedIn := l.hasSession(r)
	if r.URL.Path == "/open" {
		switch {
		case l.useCode(r.URL.Query().Get("code")):
			http.SetCookie(w, &http.Cookie{Name: l.cookie, Value: l.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		case !signedIn:
			http.Error(w, fmt.Sprintf("this link was used, or has expired (a link works once, for %s): restart kubediff ui and open the URL it prints", CodeLifetime), http.StatusForbidden)
			return
		}
		goOn(w)
		return
	}
	if !signedIn {
		http.Error(w, "open the URL kubediff ui printed (it lets one browser in)", http.StatusForbidden)
		return
	}
	l.next.ServeHTTP(w, r)
}

// useCode says whether code is one OpenURL made, unused and unexpired,
// and uses it up.
func (l *Local) useCode(code string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	expires, ok := l.codes[code]
	delete(l.codes, code)
	return ok && !l.now().After(expires)
}

func (l *Local) hasSession(r *http.Request) bool {
	c, err := r.Cookie(l.cookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(l.session)) == 1
}

// goOn sends the browser on to the page from a page of this origin,
// rather than with a redirect: a navigation that came from elsewhere (the
// opener's file) would carry its cross-site start through a redirect, and
// the browser would then hold back the SameSite=Strict cookie just set.
func goOn(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, `<!DOCTYPE html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">`+
		`<title>kubediff history</title><p><a href="/">Open kubediff's history</a></p>`+"\n")
}
