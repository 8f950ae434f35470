package watcher

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// API server outages. Left to itself, each reflector meets an outage on
// its own: it logs, backs off exponentially up to 30 s, and the backoff is
// still long when the server returns, so changes made meanwhile appear up
// to a minute late, after a log line per type per retry. Instead, one
// probe follows whether the server answers, for every target at once:
//   - a list or watch that fails for the connection asks the probe, and
//     while the server does not answer, lists and watches wait for it
//     instead of failing, so no reflector's backoff grows;
//   - when it answers again they all resume (spread over a second, not a
//     burst), each watch from the resourceVersion it had, and a gap
//     longer than the server's event history lists again and reports what
//     changed, as before;
//   - the outage is one warning when it starts and one line when it ends.
const (
	probeEvery     = 5 * time.Second // while connected: notices a hung server
	probeEveryDown = time.Second     // while disconnected: notices it answers
	probeTimeout   = 5 * time.Second
	// resumeSpread spreads the targets' first requests after an outage.
	resumeSpread = time.Second
	// reportAfter is how long after the server answers again the outage
	// is reported, so that the line can say how many changes the gap held.
	reportAfter = 5 * time.Second
)

// apiHealth follows whether the API server answers.
type apiHealth struct {
	probe     func(ctx context.Context) error
	log       *slog.Logger
	onChange  func(connected bool)
	eventsLen func() uint64 // events seen so far, to count a gap's
	// beforeResume, when set, runs when the server answers again after an
	// outage, before the waiting lists and watches resume.
	beforeResume func(ctx context.Context)

	wake chan struct{} // a failed request asks for a probe now

	mu          sync.Mutex
	down        bool
	lostAt      time.Time
	lostEvents  uint64
	answering   chan struct{} // closed when the server answers again
	probed      chan struct{} // closed and replaced after each probe
	outages     atomic.Uint64
	reportTimer *time.Timer
}

func newAPIHealth(client rest.Interface, log *slog.Logger, onChange func(bool), eventsLen func() uint64) *apiHealth {
	probe := func(ctx context.Context) error {
		// /readyz is readable by everyone (system:public-info-viewer).
		// Any answer but a 5xx means the server is there: a 403 from a
		// proxy in front is no outage of the watches.
		err := client.Get().AbsPath("/readyz").Do(ctx).Error()
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Code < http.StatusInternalServerError {
			return nil
		}
		return err
	}
	return &apiHealth{probe: probe, log: log, onChange: onChange, eventsLen: eventsLen,
		wake: make(chan struct{}, 1), probed: make(chan struct{})}
}

// run probes until ctx is done.
func (h *apiHealth) run(ctx context.Context) {
	timer := time.NewTimer(probeEvery)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-h.wake:
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := h.probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil && !h.connected() && h.beforeResume != nil {
			h.beforeResume(ctx)
		}
		h.record(err)
		every := probeEvery
		if err != nil {
			every = probeEveryDown
		}
		timer.Reset(every)
	}
}

// record takes a probe's result: a change of state is logged once.
func (h *apiHealth) record(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err != nil && !h.down:
		h.down, h.lostAt, h.answering = true, time.Now(), make(chan struct{})
		h.lostEvents = h.eventsLen()
		h.outages.Add(1)
		h.log.Warn("lost the API server: watches wait for it and resume where they stopped", "err", err)
		h.onChange(false)
	case err == nil && h.down:
		h.down = false
		close(h.answering)
		h.onChange(true)
		lostAt, lostEvents, outage := h.lostAt, h.lostEvents, h.outages.Load()
		answeredAt := time.Now()
		// One line when it heals, once the watches have had time to
		// resume, so that it can say what the gap held.
		h.reportTimer = time.AfterFunc(reportAfter, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.down || h.outages.Load() != outage {
				return // lost again meanwhile: that outage goes on
			}
			h.log.Info("API server back: watches resumed", "outage", answeredAt.Sub(lostAt).Round(100*time.Millisecond).String(),
				"changesSinceLost", h.eventsLen()-lostEvents)
		})
	case err != nil:
		h.log.Debug("API server still not answering", "err", err)
	}
	close(h.probed)
	h.probed = make(chan struct{})
}

// connected reports whether the server answered the last probe.
func (h *apiHealth) connected() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.down
}

// probeSoon asks for a probe now, without waiting for it.
func (h *apiHealth) probeSoon() {
	select {
	case h.wake <- struct{}{}:
	default: // a probe is already asked for
	}
}

// suspect asks for a probe now, after a request failed for the connection,
// and waits for its result, so that the next await knows whether to wait.
func (h *apiHealth) suspect(ctx context.Context) {
	h.mu.Lock()
	probed := h.probed
	h.mu.Unlock()
	h.probeSoon()
	select {
	case <-probed:
	case <-ctx.Done():
	}
}

// await returns at once while the server answers; while it does not, it
// waits until it does (and then a moment more, spread over the targets).
// waited says whether it waited.
func (h *apiHealth) await(ctx context.Context) (waited bool, err error) {
	h.mu.Lock()
	down, answering := h.down, h.answering
	h.mu.Unlock()
	if !down {
		return false, nil
	}
	select {
	case <-answering:
	case <-ctx.Done():
		return true, ctx.Err()
	}
	select {
	case <-time.After(rand.N(resumeSpread)):
		return true, nil
	case <-ctx.Done():
		return true, ctx.Err()
	}
}

// stop ends a pending report.
func (h *apiHealth) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reportTimer != nil {
		h.reportTimer.Stop()
	}
}

// isConnectionError reports whether err says the server could not be
// reached or stopped answering, rather than answered with an error of its
// own (a 503 is the server shutting down or not ready).
func isConnectionError(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	// HTTP/2 health checks failed: the server stopped answering (a hung
	// process, a partition). Also inside the error a watch stream reports.
	if strings.Contains(err.Error(), "http2: client connection lost") {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
	}
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsTimeout(err) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, new(*url.Error))
}
