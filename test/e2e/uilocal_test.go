package e2e

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// uiClient opens the URL kubediff ui printed as a browser would (its
// cookies kept) and returns the client and the page's base URL.
func uiClient(t *testing.T, printed string) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: deadline}
	resp, err := client.Get(printed)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("opening %s: %s", printed, resp.Status)
	}
	return client, strings.TrimSuffix(printed, regexp.MustCompile(`/open\?.*$`).FindString(printed))
}

// uiGet reads path of the page's API as the browser that opened it.
func uiGet(t *testing.T, client *http.Client, base, path string) (int, string) {
	t.Helper()
	resp, err := client.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestUIOpensTheBrowserWithoutItsKey: `kubediff ui` opens the browser
// with nothing secret on the opener's command line (which every user of
// the machine can read in /proc): the opener (a stand-in for xdg-open
// that records its arguments) gets a file only the user can read, and
// Chromium, opening it, lands on the timeline. The one-time code in it
// then lets no one else in; a request naming another host (DNS
// rebinding) is refused even with the cookie; and a second `kubediff
// ui` opened in the same browser leaves the first one's way in alone.
func TestUIOpensTheBrowserWithoutItsKey(t *testing.T) {
	ns, dir := stateDirWithOneRecord(t)

	opener := t.TempDir()
	argvFile := filepath.Join(opener, "argv")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argvFile + ".tmp && mv " + argvFile + ".tmp " + argvFile + "\n"
	if err := os.WriteFile(filepath.Join(opener, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	printed := startUIWithEnv(t, []string{"PATH=" + opener + string(os.PathListSeparator) + os.Getenv("PATH")}, "--state-dir", dir)
	base := strings.TrimSuffix(printed, regexp.MustCompile(`/open\?.*$`).FindString(printed))
	var argv []byte
	eventually(t, "kubediff ui to run the opener", func() bool {
		var err error
		argv, err = os.ReadFile(argvFile)
		return err == nil
	})
	args := strings.Fields(string(argv))
	if len(args) != 1 || strings.Contains(string(argv), "http") || strings.Contains(string(argv), "=") {
		t.Fatalf("the opener's command line holds more than a file: %q", argv)
	}
	page := args[0]
	for path, want := range map[string]os.FileMode{page: 0o600, filepath.Dir(page): 0o700 | os.ModeDir} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v (the user's alone)", path, fi.Mode(), want)
		}
	}
	redirect, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	browser := newBrowser(t)
	inBrowser(t, browser, "the opener's file", chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS(".legend")))
	if text := mainText(t, browser); !strings.Contains(text, "settings ConfigMap · "+ns) {
		t.Errorf("the timeline, opened through the file:\n%s", text)
	}

	used := regexp.MustCompile(`http://[^"]*/open\?code=[^"&]+`).FindString(string(redirect))
	if used == "" {
		t.Fatalf("the opener's file names no URL with a code:\n%s", redirect)
	}
	if code, _ := uiGet(t, &http.Client{Timeout: deadline}, used, ""); code != http.StatusForbidden {
		t.Errorf("the file's code, used a second time: %d, want 403", code)
	}

	// With the cookie of the printed URL, but naming another host.
	client, _ := uiClient(t, printed)
	cookies := client.Jar.Cookies(mustParse(t, base))
	if len(cookies) != 1 || !strings.HasSuffix(cookies[0].Name, mustParse(t, base).Port()) {
		t.Errorf("the page's cookie should be one, named after its port %s: %v", mustParse(t, base).Port(), cookies)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/history/types", nil)
	req.Host = "rebound.example:" + mustParse(t, base).Port()
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := (&http.Client{Timeout: deadline}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("Host rebound.example with the page's cookie: %s, want 403", resp.Status)
	}

	// A second page, opened in the same browser, on another port.
	second := startUI(t, "--state-dir", dir)
	inBrowser(t, browser, "a second kubediff ui", chromedp.Navigate(second), chromedp.WaitVisible(chromedp.CSS(".legend")))
	inBrowser(t, browser, "the first again", chromedp.Navigate(base+"/"))
	if body := browserValue(t, browser, "the first page", chromedp.Evaluate[string](`document.body.innerText`)); strings.Contains(body, "open the URL") {
		t.Fatalf("the first kubediff ui lost its way in when a second was opened:\n%s", body)
	}
	inBrowser(t, browser, "the first's timeline", chromedp.WaitVisible(chromedp.CSS(".legend")))
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
