package cli

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/history/historyui"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
)

func newUICommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the timeline page of kubediff's history in a browser",
		Long: `Serve the timeline page on 127.0.0.1 for you alone: of a running kubediff
(--server), whose API it calls with your kubeconfig's credentials so that you
see what your RBAC lets you list, or of a state dir (--state-dir; by default
the one 'kubediff watch' keeps). It prints
a URL that lets one browser in, once, within 2 minutes, and opens a browser
when there is one (through a file only you can read: never with a secret on
its command line).`,
		Example: `  kubediff ui
  kubediff ui --server http://127.0.0.1:8080 --no-browser`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			handler, done, err := uiHandler(cmd, stderr)
			if err != nil {
				return err
			}
			defer done()
			addr, _ := cmd.Flags().GetString("address")
			noBrowser, _ := cmd.Flags().GetBool("no-browser")
			return serveUI(cmd.Context(), addr, handler, !noBrowser, stdout, stderr)
		},
	}
	addHistorySourceFlags(cmd)
	cmd.Flags().String("address", "127.0.0.1:0", "where to serve the page (default: a free port on loopback)")
	cmd.Flags().Bool("no-browser", false, "only print the URL")
	markUnbound(cmd, "address", "no-browser")
	return cmd
}

// uiHandler serves the page and its API: a proxy to --server, or a state
// dir's history.
func uiHandler(cmd *cobra.Command, stderr io.Writer) (http.Handler, func(), error) {
	mux := http.NewServeMux()
	historyui.Register(mux)
	if reader, store, err := openStoreReader(cmd); reader != nil || err != nil {
		if err != nil {
			return nil, nil, err
		}
		rules, err := configRules(cmd)
		if err != nil {
			store.Close()
			return nil, nil, err
		}
		// Read with the database's credentials: no Kubernetes RBAC.
		mux.Handle("/api/", &storeAPI{store: store, rules: rules, all: apiMux(reader, rules), byID: map[string]http.Handler{}})
		return mux, store.Close, nil
	}
	remote, dir, err := historyFlags(cmd, stderr)
	if err != nil {
		return nil, nil, err
	}
	if remote != nil {
		// A page that could only say "Bad Gateway": refuse to start.
		if err := remote.Ping(cmd.Context()); err != nil {
			return nil, nil, err
		}
		mux.Handle("/api/", remote.Proxy())
		return mux, func() {}, nil
	}
	stateDir, err := openStateDir(cmd, dir)
	if err != nil {
		return nil, nil, err
	}
	mux.Handle("/api/", stateDir.Handler())
	return mux, func() {}, nil
}

// uiIdleTimeout closes a browser's keep-alive connection left idle, as
// kubediff's own HTTP server does: a page left open in a tab holds no
// connection for ever. A variable, for tests.
var uiIdleTimeout = time.Minute

// serveUI serves h on addr until ctx is done, guarded for you alone
// (historyui.Local): it prints a URL that lets one browser in and opens
// a browser with another.
func serveUI(ctx context.Context, addr string, h http.Handler, browse bool, stdout, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--address %s: %w", addr, err)
	}
	local, err := historyui.NewLocal(h, ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		return err
	}
	fmt.Fprintf(stdout, "kubediff history: %s\n", local.OpenURL())
	if browse {
		remove, err := openBrowser(local.OpenURL())
		if err != nil {
			fmt.Fprintf(stderr, "kubediff ui: no browser opened (%v): open the URL above\n", err)
		}
		defer remove()
	}
	srv := &http.Server{Handler: local, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: uiIdleTimeout}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openBrowser opens url in the desktop's browser without putting it on
// a command line, where any user of the machine can read it
// (/proc/PID/cmdline, ps): the opener is given a file only you may read
// (0600, in a 0700 directory) that sends the browser on to url. Without
// an opener (a server, a container) the printed URL is the way in. The
// file goes when remove is called or url's code has expired.
func openBrowser(url string) (remove func(), err error) {
	remove = func() {}
	opener := map[string]string{"darwin": "open", "windows": "explorer"}[runtime.GOOS]
	if opener == "" {
		opener = "xdg-open"
	}
	path, err := exec.LookPath(opener)
	if err != nil {
		return remove, err
	}
	dir, err := os.MkdirTemp(os.Getenv("XDG_RUNTIME_DIR"), "kubediff-ui-")
	if err != nil {
		return remove, err
	}
	var once sync.Once
	remove = func() { once.Do(func() { _ = os.RemoveAll(dir) }) }
	time.AfterFunc(historyui.CodeLifetime, remove)
	page := filepath.Join(dir, "open.html")
	escaped := html.EscapeString(url)
	redirect := `<!DOCTYPE html><meta charset="utf-8"><meta name="referrer" content="no-referrer">` +
		`<meta http-equiv="refresh" content="0;url=` + escaped + `"><title>kubediff history</title>` +
		`<p><a href="` + escaped + `">Open kubediff's history</a></p>` + "\n"
	if err := os.WriteFile(page, []byte(redirect), 0o600); err != nil {
		return remove, err
	}
	opening := exec.Command(path, page)
	if err := opening.Start(); err != nil {
		return remove, err
	}
	go func() { _ = opening.Wait() }() // xdg-open returns at once; reap it
	return remove, nil
}

// storeAPI serves the history API of a history store to the page: the
// records of the cluster ?cluster= names, else of every cluster the
// reader reads (a fleet's page: rows name their clusters and link to
// them).
type storeAPI struct {
	store *pgstore.Store
	rules *diff.Differ
	all   http.Handler
	mu    sync.Mutex
	byID  map[string]http.Handler
}

func (a *storeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("cluster")
	if name == "" {
		a.all.ServeHTTP(w, r)
		return
	}
	id, err := storeCluster(r.Context(), a.store, name)
	if err != nil {
		historyapi.WriteError(w, http.StatusNotFound, "NotFound", err)
		return
	}
	a.mu.Lock()
	h := a.byID[id]
	if h == nil {
		h = apiMux(a.store.Cluster(id), a.rules)
		a.byID[id] = h
	}
	a.mu.Unlock()
	q := r.URL.Query()
	q.Del("cluster") // the cluster's API knows no other
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = q.Encode()
	h.ServeHTTP(w, r2)
}

// apiMux serves the history API over reader, without access checks.
func apiMux(reader historyapi.Store, rules *diff.Differ) http.Handler {
	mux := http.NewServeMux()
	api := historyapi.NewHandler(reader, nil)
	api.SetRules(rules)
	api.Register(mux)
	return mux
}
