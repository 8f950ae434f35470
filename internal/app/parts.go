package app

import (
	"io"
	"log/slog"
	"net/http"
	"os"

	"golang.org/x/term"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/listkeys"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/stdout"
	"github.com/kubediff/kubediff/pkg/state"
)

// serveHTTP serves health and metrics on addr until the returned stop is
// called; an empty addr serves nothing.
func serveHTTP(addr string, m *metrics.Metrics, ready func() error, routes func(*http.ServeMux), log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	_, stop, err = metrics.Serve(addr, m, ready, routes, log)
	switch {
	case err == nil:
		return stop, nil
	case addr == config.Default().HTTPAddress:
		// In a terminal, something else often has port 8080; the watch
		// matters more than its metrics.
		log.Warn("not serving health and metrics (set --http-address to choose another address)", "err", err)
		return func() {}, nil
	}
	// A malformed address is refused with the config; this one is well
	// formed but taken or not permitted: a runtime failure.
	return nil, err
}

func newDiffer(cfg config.Config, keys *listkeys.Source, st *state.Store) (*diff.Differ, error) {
	d := cfg.Diff
	var salt []byte // without a state dir: one for this process
	if st != nil {
		var err error
		if salt, err = st.Salt(); err != nil {
			return nil, err
		}
	}
	rules := diff.Rules{
		Paths:    d.IgnorePaths,
		Defaults: d.Defaults.Enabled(),
	}
	for _, r := range d.Ignore {
		rules.PerResource = append(rules.PerResource, diff.ResourceRule{Resources: r.Resources, Paths: r.Paths})
	}
	for _, r := range d.DefaultsOff {
		rules.DefaultsOff = append(rules.DefaultsOff, diff.DefaultsOff{Rules: r.Rules, Resources: r.Resources})
	}
	differ, err := diff.New(diff.Options{
		Rules: rules,
		Redact: diff.RedactOptions{Paths: d.Redact.Paths, Keys: d.Redact.Keys,
			SafeSecretAnnotations: d.Redact.SafeSecretAnnotations, Salt: salt},
		ListKeys: keys,
		Patch:    d.Patch,
		Unified:  cfg.Output == config.OutputText && d.Style == config.StyleUnified,
		// The watcher caches objects through CacheTransform.
		CachedObjects: true,
	})
	if err != nil {
		return nil, ConfigError{err}
	}
	return differ, nil
}

func newStdoutSink(cfg config.Config, out io.Writer) notify.Notifier {
	switch {
	case cfg.Output == config.OutputText && cfg.Fold:
		return stdout.NewFoldingText(out, UseColor(cfg.Color, out))
	case cfg.Output == config.OutputText:
		return stdout.NewText(out, UseColor(cfg.Color, out))
	}
	return stdout.NewJSON(out)
}

// UseColor follows --color, and in auto mode colours only a terminal and
// respects NO_COLOR (https://no-color.org).
func UseColor(mode string, out io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
