package historyui

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"testing"
	"time"
)

// servedLocal serves a page guarded by Local on 127.0.0.1; the page
// answers "the history".
func servedLocal(t *testing.T) (*Local, *httptest.Server) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	local, err := NewLocal(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "the history")
	}), srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = local
	srv.Start()
	t.Cleanup(srv.Close)
	return local, srv
}

// browser is an HTTP client keeping cookies as a browser does: per
// host, whatever the port.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

func get(t *testing.T, c *http.Client, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestLocalCodeOpensOnce: the URL kubediff ui gives lets one browser in;
// the same URL, opened again by another, is refused, as is one whose
// code expired; the browser let in keeps its way in.
func TestLocalCodeOpensOnce(t *testing.T) {
	local, _ := servedLocal(t)
	url := local.OpenURL()
	page := strings.TrimSuffix(url, url[strings.Index(url, "/open"):]) + "/"
	first := browser(t)
	if code, body := get(t, first, url); code != http.StatusOK || !strings.Contains(body, `content="0;url=/"`) {
		t.Fatalf("first use of the code: %d %q, want a page moving on to /", code, body)
	}
	if code, body := get(t, first, page); code != http.StatusOK || body != "the history" {
		t.Errorf("the browser let in: %d %q", code, body)
	}
	second := browser(t)
	if code, _ := get(t, second, url); code != http.StatusForbidden {
		t.Errorf("second use of the code, by another browser: %d, want 403", code)
	}
	if code, _ := get(t, second, page); code != http.StatusForbidden {
		t.Errorf("the page, to the browser refused: %d, want 403", code)
	}
	if code, _ := get(t, browser(t), strings.Replace(url, "code=", "code=x", 1)); code != http.StatusForbidden {
		t.Errorf("a made-up code: %d, want 403", code)
	}

	late := local.OpenURL()
	now := time.Now()
	local.now = func() time.Time { return now.Add(CodeLifetime + time.Second) }
	if code, _ := get(t, browser(t), late); code != http.StatusForbidden {
		t.Errorf("a code used after %s: %d, want 403", CodeLifetime, code)
	}
}

// TestLocalCookieIsThePorts: two pages on two ports of 127.0.0.1, opened
// in one browser (which sends every port the same cookies), each keep
// their own way in; the cookie is named after the port.
func TestLocalCookieIsThePorts(t *testing.T) {
	one, srvOne := servedLocal(t)
	two, srvTwo := servedLocal(t)
	b := browser(t)
	for _, url := range []string{one.OpenURL(), two.OpenURL()} { // one, then two, as a person would
		if code, _ := get(t, b, url); code != http.StatusOK {
			t.Fatalf("open %s: %d", url, code)
		}
	}
	for _, srv := range []*httptest.Server{srvOne, srvTwo} {
		if code, body := get(t, b, srv.URL+"/"); code != http.StatusOK || body != "the history" {
			t.Errorf("%s after both were opened: %d %q", srv.URL, code, body)
		}
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		cookies := b.Jar.Cookies(mustURL(t, srv.URL))
		if !hasCookie(cookies, "kubediff-ui-"+port) {
			t.Errorf("no cookie named kubediff-ui-%s: %v", port, cookies)
		}
	}
}

// TestLocalChecksHost: a request that names another host, as a page of a
// site rebound to 127.0.0.1 would send with the browser's cookie, is
// refused; loopback's names with the port are answered.
func TestLocalChecksHost(t *testing.T) {
	local, srv := servedLocal(t)
	b := browser(t)
	if code, _ := get(t, b, local.OpenURL()); code != http.StatusOK {
		t.Fatalf("open: %d", code)
	}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// The browser's cookie, sent whatever name the request gives the host.
	cookie := b.Jar.Cookies(mustURL(t, srv.URL))[0]
	plain := &http.Client{Timeout: 30 * time.Second}
	for host, want := range map[string]int{
		"127.0.0.1:" + port:    http.StatusOK,
		"localhost:" + port:    http.StatusOK,
		"[::1]:" + port:        http.StatusOK,
		"evil.example:" + port: http.StatusForbidden,
		"127.0.0.1:1":          http.StatusForbidden,
		"127.0.0.1":            http.StatusForbidden,
	} {
		if code, body := get(t, plain, srv.URL+"/", "Host", host, "Cookie", cookie.String()); code != want {
			t.Errorf("Host %q: %d, want %d: %s", host, code, want, body)
		}
	}
	if code, _ := get(t, browser(t), strings.Replace(local.OpenURL(), "127.0.0.1", "localhost", 1), "Host", "evil.example:"+port); code != http.StatusForbidden {
		t.Errorf("a fresh code through a foreign Host: %d, want 403", code)
	}
}

func mustURL(t *testing.T, s string) *neturl.URL {
	t.Helper()
	u, err := neturl.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func hasCookie(cookies []*http.Cookie, name string) bool {
	for _, c := range cookies {
		if c.Name == name {
			return true
		}
	}
	return false
}
