package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/pkg/historyapi"
	"github.com/kubediff/kubediff/pkg/historyui"
	"github.com/kubediff/kubediff/pkg/state"
)

func newUICommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the timeline page of kubediff's history in a browser",
		Long: `Serve the timeline page on 127.0.0.1 for you alone: of a running kubediff
(--server), whose API it calls with your kubeconfig's credentials so that you
see what your RBAC lets you list, or of a state dir (--state-dir). It prints
the URL (which holds the page's key) and opens a browser when there is one.`,
		Example: `  kubediff ui --server http://127.0.0.1:8080
  kubediff ui --state-dir /var/lib/kubediff --no-browser`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			handler, done, err := uiHandler(cmd, stderr)
			if err != nil {
				return err
			}
			defer done()
			addr, _ := cmd.Flags().GetString("address")
			noBrowser, _ := cmd.Flags().GetBool("no-browser")
			return serveUI(cmd.Context(), addr, historyui.NewLocal(handler), !noBrowser, stdout)
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
	remote, dir, err := historyFlags(cmd, stderr)
	if err != nil {
		return nil, nil, err
	}
	if remote != nil {
		mux.Handle("/api/", remote.Proxy())
		return mux, func() {}, nil
	}
	reader, closeDB, err := state.OpenHistory(dir)
	if err != nil {
		return nil, nil, err
	}
	historyapi.NewHandler(reader, nil).Register(mux)
	return mux, func() { _ = closeDB() }, nil
}

// serveUI serves h on addr until ctx is done, printing the URL and
// opening a browser on it.
func serveUI(ctx context.Context, addr string, h *historyui.Local, browse bool, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--address %s: %w", addr, err)
	}
	url := "http://" + ln.Addr().String() + h.OpenPath()
	fmt.Fprintf(stdout, "kubediff history: %s\n", url)
	if browse {
		openBrowser(url)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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

// openBrowser tries the desktop's opener; without one (a server, a
// container) the printed URL is the way in.
func openBrowser(url string) {
	opener := map[string]string{"darwin": "open", "windows": "explorer"}[runtime.GOOS]
	if opener == "" {
		opener = "xdg-open"
	}
	if path, err := exec.LookPath(opener); err == nil {
		_ = exec.Command(path, url).Start()
	}
}
