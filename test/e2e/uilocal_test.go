package e2e

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
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
