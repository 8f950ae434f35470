package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/slack"
	"github.com/kubediff/kubediff/pkg/notify/webhook"
)

// sinks are the running delivery queues.
type sinks struct {
	router notify.Router
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// startSinks builds stdout and every configured sink, each behind its own
// queue, and starts delivering. all is every discovered type, against
// which match.resources names are resolved.
func startSinks(ctx context.Context, cfg config.Config, all []discovery.Resource, out io.Writer, log *slog.Logger) (*sinks, error) {
	var router notify.Router
	if cfg.Output != config.OutputNone {
		q := notify.NewQueue("stdout", newStdoutSink(cfg, out), notify.QueueOptions{Size: cfg.QueueSize, Log: log})
		router = append(router, notify.Route{Queue: q})
	}
	for _, sc := range cfg.Sinks {
		sink, err := newSink(sc, log)
		if err != nil {
			return nil, usageError{fmt.Errorf("sinks[%s]: %w", sc.Name, err)}
		}
		match, err := newMatch(sc.Match, all)
		if err != nil {
			return nil, usageError{fmt.Errorf("sinks[%s].match: %w", sc.Name, err)}
		}
		size := cfg.QueueSize
		if sc.QueueSize > 0 {
			size = sc.QueueSize
		}
		q := notify.NewQueue(sc.Name, sink, notify.QueueOptions{Size: size, Log: log})
		router = append(router, notify.Route{Queue: q, Match: match})
	}
	// Delivery outlives the watch context by the drain timeout.
	deliverCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &sinks{router: router, cancel: cancel} // cancel ends retries at the drain deadline
	for _, r := range router {
		s.wg.Go(func() { r.Queue.Run(deliverCtx) })
	}
	return s, nil
}

// drain stops accepting records and waits for queued ones, up to timeout.
func (s *sinks) drain(timeout time.Duration, log *slog.Logger) {
	for _, r := range s.router {
		r.Queue.Close()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		log.Warn("drain timeout reached: records still queued are dropped", "timeout", timeout.String())
		s.cancel()
		<-done
	}
	for _, r := range s.router {
		if st := r.Queue.Stats(); st.Dropped > 0 || st.Failed > 0 {
			log.Warn("some records were not delivered", "sink", r.Queue.Name(), "delivered", st.Delivered, "failed", st.Failed, "dropped", st.Dropped)
		}
	}
}

func newSink(sc config.SinkConfig, log *slog.Logger) (notify.Notifier, error) {
	switch sc.Type {
	case config.SinkWebhook:
		secret, err := secretValue(sc.Secret, sc.SecretFile, "secretFile")
		if err != nil {
			return nil, err
		}
		headers := map[string]string{}
		for k, v := range sc.Headers {
			headers[k] = expandEnv(v)
		}
		if sc.InsecureSkipVerify {
			log.Warn("TLS verification is off for this webhook", "sink", sc.Name)
		}
		return webhook.New(webhook.Options{
			URL: expandEnv(sc.URL), Headers: headers, Secret: []byte(secret), Format: sc.Format,
			Timeout: sc.Timeout, InsecureSkipVerify: sc.InsecureSkipVerify,
		})
	case config.SinkSlack:
		token, err := secretValue(sc.Token, sc.TokenFile, "tokenFile")
		if err != nil {
			return nil, err
		}
		return slack.New(slack.Options{Token: token, Channel: sc.Channel, APIURL: expandEnv(sc.APIURL)})
	}
	return nil, fmt.Errorf("type: %q is not one of webhook, slack", sc.Type)
}

// secretValue reads an inline value (with ${ENV} expanded) or a file. The
// value itself never appears in an error.
func secretValue(inline, file, fileKey string) (string, error) {
	if file == "" {
		return expandEnv(inline), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", fileKey, err)
	}
	return strings.TrimSpace(string(data)), nil
}

func newMatch(mc config.MatchConfig, all []discovery.Resource) (notify.Match, error) {
	m := notify.Match{Namespaces: mc.Namespaces, Types: mc.Types}
	if len(mc.Resources) > 0 {
		selected, err := discovery.Select(all, mc.Resources, nil)
		if err != nil {
			return m, err
		}
		for _, r := range selected {
			m.Resources = append(m.Resources, schema.GroupResource{Group: r.GVR.Group, Resource: r.GVR.Resource})
		}
	}
	if mc.Labels != "" {
		sel, err := labels.Parse(mc.Labels)
		if err != nil {
			return m, fmt.Errorf("labels: %w", err)
		}
		m.Labels = sel
	}
	return m, nil
}

// envReference is the ${NAME} form config values may use.
var envReference = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${NAME} with the variable's value and leaves every
// other $ alone: secrets and URLs may contain one.
func expandEnv(s string) string {
	return envReference.ReplaceAllStringFunc(s, func(ref string) string {
		return os.Getenv(ref[2 : len(ref)-1])
	})
}
