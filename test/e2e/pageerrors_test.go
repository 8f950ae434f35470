package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestPageSaysWhatIsWrong: in Chromium, the timeline page of `kubediff
// ui --server` turns a moment it cannot read (?from=yesterday) into an
// error the user sees, not silently the last hour; and when the kubediff
// behind it stops, the page says which one does not answer instead of a
// bare "Bad Gateway".
func TestPageSaysWhatIsWrong(t *testing.T) {
	ns := newNamespace(t)
	viewer := tokenKubeconfig(t, ns, "viewer", ns)
	w := startBinary(t, "watch", "-n", ns, "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.logOnFailure()
	server := httpAddress(t, w)

	browser := newBrowser(t)
	page := startUI(t, "--server", server, "--kubeconfig", viewer)
	inBrowser(t, browser, "timeline", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("p.status:not(:empty)")))
	base := strings.TrimSuffix(page, regexp.MustCompile(`/open\?.*$`).FindString(page))

	inBrowser(t, browser, "from=yesterday", chromedp.Navigate(base+"/?from=yesterday"), chromedp.WaitVisible(chromedp.CSS("p.error")))
	if text := mainText(t, browser); !strings.Contains(text, `from "yesterday" is neither an RFC 3339 time`) {
		t.Errorf("?from=yesterday shows:\n%s", text)
	}

	w.shutdown()
	inBrowser(t, browser, "kubediff stopped", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("p.error")))
	if text := mainText(t, browser); !strings.Contains(text, "kubediff at "+server+" does not answer") || !strings.Contains(text, "connection refused") {
		t.Errorf("with kubediff stopped the page shows:\n%s", text)
	}
}
