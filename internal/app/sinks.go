package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/fold"
	"github.com/kubediff/kubediff/pkg/state"
)

// sinks are the running delivery queues.
type sinks struct {
	router notify.Router
	wg     sync.WaitGroup
	cancel context.CancelFunc
	// spooled: the queues are in the state dir, so what a drain cannot
	// deliver is kept, not dropped.
	spooled bool
}

// startSinks builds stdout and every configured sink, each behind its own
// queue, and starts delivering. all is every discovered type, against
// which match.resources names are resolved. With a state dir, each queue
// is on disk, and what the last run left undelivered goes first.
func startSinks(ctx context.Context, cfg config.Config, all []discovery.Resource, st *state.Store, out io.Writer, outcome fold.Outcome, log *slog.Logger) (*sinks, error) {
	var router notify.Router
	queue := func(name string, sink notify.Notifier, opts notify.QueueOptions) (notify.Queue, error) {
		opts.Log = log
		if s, ok := sink.(fold.OutcomeSetter); ok && outcome != nil {
			s.SetOutcome(outcome) // a folded rollout says how it ended
		}
		if st == nil {
			return notify.NewQueue(name, sink, opts), nil
		}
		spool, err := st.Spool(name)
		if err != nil {
			return nil, err
		}
		return notify.NewSpooledQueue(name, sink, spool, opts), nil
	}
	globalMax, _ := config.ParseBytes(cfg.QueueMaxBytes) // validated
	if cfg.Output != config.OutputNone {
		// stdout never drops: a slow reader slows kubediff down instead.
		q, err := queue("stdout", newStdoutSink(cfg, out), notify.QueueOptions{Size: cfg.QueueSize, MaxBytes: globalMax, Block: true})
		if err != nil {
			return nil, err
		}
		router = append(router, notify.Route{Queue: q})
	}
	for _, sc := range cfg.Sinks {
		// The config was validated: what fails here (a secretFile that
		// cannot be read, an exporter that cannot start) fails at run time.
		sink, err := newSink(sc, log)
		if err != nil {
			return nil, fmt.Errorf("sinks[%s]: %w", sc.Name, err)
		}
		match, err := newMatch(sc.Match, all)
		if err != nil {
			return nil, ConfigError{fmt.Errorf("sinks[%s].match: %w", sc.Name, err)}
		}
		size := cfg.QueueSize
		if sc.QueueSize > 0 {
			size = sc.QueueSize
		}
		q, err := queue(sc.Name, sink, notify.QueueOptions{Size: size, MaxBytes: sc.MaxBytes(cfg.QueueMaxBytes)})
		if err != nil {
			return nil, err
		}
		router = append(router, notify.Route{Queue: q, Match: match})
	}
	if st != nil {
		var names []string
		for _, r := range router {
			names = append(names, r.Queue.Name())
		}
		if err := st.DropSpoolsExcept(names); err != nil {
			return nil, err
		}
	}
	// Delivery outlives the watch context by the drain timeout.
	deliverCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &sinks{router: router, cancel: cancel, spooled: st != nil} // cancel ends retries at the drain deadline
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
		if s.spooled {
			log.Warn("drain timeout reached: records still queued stay in the state dir", "timeout", timeout.String())
		} else {
			log.Warn("drain timeout reached: records still queued are dropped", "timeout", timeout.String())
		}
		s.cancel()
		<-done
	}
	for _, r := range s.router {
		if st := r.Queue.Stats(); st.Dropped > 0 || st.Failed > 0 {
			log.Warn("some records were not delivered", "sink", r.Queue.Name(), "delivered", st.Delivered, "failed", st.Failed, "dropped", st.Dropped)
		}
	}
}

// newSink builds a configured sink through its type's package.
func newSink(sc config.SinkEntry, log *slog.Logger) (notify.Notifier, error) {
	typed, err := sc.Decode()
	if err != nil {
		return nil, err
	}
	return typed.Build(log.With("sink", sc.Name))
}

func newMatch(mc config.MatchConfig, all []discovery.Resource) (notify.Match, error) {
	m := notify.Match{Namespaces: mc.Namespaces, Types: mc.Types, Clusters: mc.Clusters, Rules: mc.Rules, Severity: mc.Severity}
	if len(mc.Resources) > 0 {
		selected, err := discovery.Select(all, mc.Resources, nil)
		if err != nil {
			return m, err
		}
		for _, r := range selected {
			m.Resources = append(m.Resources, notify.GroupResource{Group: r.GVR.Group, Resource: r.GVR.Resource})
		}
	}
	if mc.Labels != "" {
		sel, err := labels.Parse(mc.Labels)
		if err != nil {
			return m, fmt.Errorf("labels: %w", err)
		}
		m.Labels = func(l map[string]string) bool { return sel.Matches(labels.Set(l)) }
	}
	return m, nil
}
