package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/history/historyui"
)

// TestTimelinePageInABrowser: headless Chromium (Debian's package, as a
// person's browser) opens `kubediff ui` of a running kubediff as a user
// who may list one namespace. The timeline shows the scenario's changes
// with a controller's objects folded under their owner, a filter in the
// URL narrows it to one object, the object's page shows the changed field
// and a config file's line hunk, and the two-moment diff shows the right
// lines. A user of another namespace sees no change. Screenshots of each
// view are kept (the path is logged).
func TestTimelinePageInABrowser(t *testing.T) {
	ns, elsewhere := newNamespace(t), newNamespace(t)
	viewer, outsider := tokenKubeconfig(t, ns, "viewer", ns), tokenKubeconfig(t, ns, "outsider", elsewhere)
	w := startBinary(t, "watch", "-n", ns, "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.logOnFailure()
	moments := changeAtKnownMoments(t, w, ns)
	createOwned(t, w, ns, "web-1", "web-2", "web-3")
	changeConfigFile(t, w, ns)
	server := httpAddress(t, w)
	eventually(t, "the history to hold the changes", func() bool {
		out, _ := cliOutput(t, "history", "-n", ns, "--server", server, "--kubeconfig", viewer)
		return strings.Count(out, "\n") == 9
	})

	browser := newBrowser(t)
	page := startUI(t, "--server", server, "--kubeconfig", viewer)
	inBrowser(t, browser, "timeline", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(".legend")))
	text := mainText(t, browser)
	for _, want := range []string{"9 changes", "settings ConfigMap · " + ns, "web-5d4f ReplicaSet · " + ns + " · 3 objects, 3 changes", "app ConfigMap · " + ns} {
		if !strings.Contains(text, want) {
			t.Errorf("timeline lacks %q:\n%s", want, text)
		}
	}
	screenshot(t, browser, "timeline")
	// With no window chosen the window is fitted to the changes (seconds
	// of them), not a fixed hour whose last sliver they would crowd: they
	// spread over the lanes. With the controller's burst opened, every
	// object has a row.
	marks := browserValue(t, browser, "the marks' places", chromedp.Evaluate[[]float64](`[...document.querySelectorAll(".lane .mark")].map((m) => parseFloat(m.style.left))`))
	if first, last := slices.Min(marks), slices.Max(marks); first > 15 || last < 85 {
		t.Errorf("the default window does not fit the changes: marks from %.0f%% to %.0f%% of the lanes", first, last)
	}
	inBrowser(t, browser, "open the burst", chromedp.Click(chromedp.CSS("details > summary")), chromedp.WaitVisible(chromedp.CSS("details .row.child")))
	if text = mainText(t, browser); !strings.Contains(text, "web-2 ConfigMap · "+ns) {
		t.Errorf("the opened burst lacks its objects:\n%s", text)
	}
	screenshot(t, browser, "zoomed")
	// Keyboard: the object's row is a link; focused and Enter, it opens
	// the object's page.
	inBrowser(t, browser, "keyboard", chromedp.Focus(chromedp.CSS(".row a.label")),
		chromedp.SendKeys(chromedp.CSS(".row a.label"), kb.Enter), chromedp.WaitVisible(chromedp.CSS(".record")))
	if text = mainText(t, browser); !strings.Contains(text, "Compare two moments") {
		t.Errorf("Enter on the first row did not open an object's page:\n%s", text)
	}

	base := strings.TrimSuffix(page, regexp.MustCompile(`/open\?.*$`).FindString(page))
	inBrowser(t, browser, "filter", chromedp.Navigate(base+"/?namespace="+ns+"&kind=cm&name=settings"), chromedp.WaitVisible(chromedp.CSS(".legend")))
	text = mainText(t, browser)
	if !strings.Contains(text, "4 changes") || strings.Contains(text, "web-5d4f") || strings.Contains(text, "app ConfigMap") {
		t.Errorf("filtered to cm/settings:\n%s", text)
	}
	screenshot(t, browser, "filtered")

	inBrowser(t, browser, "object page", chromedp.Navigate(base+"/?object=configmaps/app&namespace="+ns), chromedp.WaitVisible(chromedp.CSS(".record")))
	text = mainText(t, browser)
	if !strings.Contains(text, `data["app.conf"]`) || !strings.Contains(text, "- replicas = 2") || !strings.Contains(text, "+ replicas = 5") {
		t.Errorf("object page lacks the field and its line hunk:\n%s", text)
	}
	screenshot(t, browser, "object")

	inBrowser(t, browser, "two-moment diff", chromedp.Navigate(base+"/?object=configmaps/settings&namespace="+ns), chromedp.WaitVisible(chromedp.CSS(".record")),
		chromedp.SetValue(chromedp.CSS(`.compare input[name="from"]`), moments[1]), chromedp.SetValue(chromedp.CSS(`.compare input[name="to"]`), moments[3]),
		chromedp.Click(chromedp.CSS(".compare button")), chromedp.WaitVisible(chromedp.CSS("#diff span")))
	var diff string
	eventually(t, "the diff's text", func() bool {
		diff = browserValue(t, browser, "diff text", chromedp.TextContent(chromedp.CSS("#diff")))
		return diff != ""
	})
	if !strings.Contains(diff, "-  level: one") || !strings.Contains(diff, "+  level: three") {
		t.Errorf("two-moment diff:\n%s", diff)
	}
	screenshot(t, browser, "diff")
	blameAndRestoreOnThePage(t, browser)
	reportPageWeight(t, browser, base)

	stranger := startUI(t, "--server", server, "--kubeconfig", outsider)
	inBrowser(t, browser, "another namespace's user", chromedp.Navigate(stranger), chromedp.WaitVisible(chromedp.CSS("p.status:not(:empty)")))
	text = mainText(t, browser)
	if !strings.Contains(text, "No changes") {
		t.Errorf("a user of another namespace sees:\n%s", text)
	}
}

// blameAndRestoreOnThePage checks the deleted ConfigMap's page (open in
// browser): its lines blamed as they were before its deletion, and the
// restore manifest of then, without what the API server sets.
func blameAndRestoreOnThePage(t *testing.T, browser context.Context) {
	t.Helper()
	var blamed string
	eventually(t, "the blame's lines", func() bool {
		blamed = browserValue(t, browser, "blame text", chromedp.TextContent(chromedp.CSS("#blame")))
		return strings.Contains(blamed, "level: three")
	})
	if !regexp.MustCompile(`(?m)^\S+Z \S+ +│   level: three$`).MatchString(blamed) || !strings.Contains(blamed, "│   name: settings") {
		t.Errorf("blame on the page:\n%s", blamed)
	}
	inBrowser(t, browser, "restore manifest", chromedp.Click(chromedp.CSS(`form[aria-label="Restore manifest at a moment"] button`)),
		chromedp.WaitVisible(chromedp.CSS("#restore:not(:empty)")))
	manifest := browserValue(t, browser, "restore manifest", chromedp.TextContent(chromedp.CSS("#restore")))
	if !strings.Contains(manifest, "level: three") || strings.Contains(manifest, "resourceVersion") || strings.Contains(manifest, "uid:") {
		t.Errorf("restore manifest on the page:\n%s", manifest)
	}
	screenshot(t, browser, "blame-restore")
}

// changeConfigFile changes one line of a config file in a ConfigMap.
func changeConfigFile(t *testing.T, w *run, ns string) {
	t.Helper()
	conf := func(replicas int) string {
		var b strings.Builder
		for i := range 30 {
			fmt.Fprintf(&b, "option_%02d = on\n", i)
		}
		return b.String() + fmt.Sprintf("replicas = %d\n", replicas)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"app.conf": conf(2)}}
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("ConfigMap", ns, "app", 1)
	patch := fmt.Sprintf(`{"data":{"app.conf":%q}}`, conf(5))
	if _, err := clients.CoreV1().ConfigMaps(ns).Patch(bg, "app", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("ConfigMap", ns, "app", 2)
}

// newBrowser starts headless Chromium (hack/browser.sh installs it).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium: `make browser` (hack/browser.sh) installs Debian's package")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser, on a context without a timeout:
	// the browser lives as long as that context.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// inBrowser runs steps in the page, each run bounded by the deadline.
func inBrowser(t *testing.T, browser context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(browser, deadline)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, pageState(browser))
	}
}

// pageState says where the browser is and what its page shows, for a
// failed step's message.
func pageState(browser context.Context) string {
	ctx, cancel := context.WithTimeout(browser, 10*time.Second)
	defer cancel()
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " shows:\n" + (document.body ? document.body.innerText : "")`))
	if err != nil {
		return "the page could not be read: " + err.Error()
	}
	return "the page at " + shown
}

// browserValue runs an action that reads something from the page.
func browserValue[T any](t *testing.T, browser context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(browser, deadline)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func mainText(t *testing.T, browser context.Context) string {
	t.Helper()
	return browserValue(t, browser, "the page's text", chromedp.Text(chromedp.CSS("main")))
}

// screenshot keeps a picture of the page under KUBEDIFF_ARTIFACTS (else
// the temp dir's kubediff-artifacts).
func screenshot(t *testing.T, browser context.Context, name string) {
	t.Helper()
	dir := os.Getenv("KUBEDIFF_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "kubediff-artifacts")
	}
	png := browserValue(t, browser, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(dir, "timeline-"+name+".png")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// reportPageWeight logs the page's size and its time to first paint.
func reportPageWeight(t *testing.T, browser context.Context, base string) {
	t.Helper()
	inBrowser(t, browser, "first paint", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(".legend")))
	paint := browserValue(t, browser, "first paint", chromedp.Evaluate[float64](`(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime`))
	t.Logf("page: %d bytes (HTML, CSS and JS, uncompressed); first contentful paint %.0f ms", historyui.Size(), paint)
}

// startUI runs `kubediff ui --no-browser` with args and returns the URL
// it prints.
func startUI(t *testing.T, args ...string) string {
	t.Helper()
	return startUIWithEnv(t, nil, append([]string{"--no-browser"}, args...)...)
}

// startUIWithEnv runs `kubediff ui` with more environment variables and
// args, and returns the URL it prints.
func startUIWithEnv(t *testing.T, environment []string, args ...string) string {
	t.Helper()
	return testenv.StartUI(t, kubediff, deadline, append([]string{"KUBECONFIG=" + env.Kubeconfig}, environment...), args...)
}
