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
//   - a watch whose connection broke (a server killed, a partition) makes
//     every list and watch wait as well, until a probe answers: the probe
//     can take seconds to say that the server is lost (client-go retries
//     a GET that met the dying connection a second later), and a server
//     restarted meanwhile, perhaps on another cluster, must not be
//     listed before the cluster is checked (cluster.go);
//   - when it answers again they all resume (spread over a second, not a
//     burst), each watch from the resourceVersion it had, and a gap
//     longer than the server's event history lists again and reports what
//     changed, as before;
//   - the outage is one warning when it starts and one line when it ends,
//     once the watches have resumed, saying how many changes the gap held.
const (
	probeEvery     = 5 * time.Second // while connected: notices a hung server
	probeEveryDown = time.Second     // while disconnected: notices it answers
	probeTimeout   = 5 * time.Second
	// resumeSpread spreads the targets' first requests after an outage.
	resumeSpread = time.Second
	// The line saying the server is back waits until every target the
	// outage interrupted has resumed (its watch open again, or its list
	// in), at most resumeWithin after the server answered: on a loaded
	// machine that takes seconds, and a fixed delay counted too few
	// changes. Then the changes the gap held arrive as the watches catch
	// up: it waits until none came for settleQuiet, at most settleWithin.
	// A server resumed from SIGSTOP on 2 loaded cores (load 25) sent one
	// change, then the other 9 of the gap 1.5 s later, as its watch cache
	// caught up with etcd: a second of quiet counted 1 of 10.
	resumeWithin = time.Minute
	settleQuiet  = 3 * time.Second
	settleWithin = 15 * time.Second
	reportPoll   = 100 * time.Millisecond
)

// apiHealth follows whether the API server answers.
type apiHealth struct {
	probe     func(ctx context.Context) error
	log       *slog.Logger
	onChange  func(connected bool)
	eventsLen func() uint64 // events seen so far, to count a gap's
	// beforeResume, when set, runs when the server answers again after an
	// outage or a broken watch, before the waiting lists and watches
	// resume; an error (the server stopped answering again) keeps them
	// waiting, as a failed probe does.
	beforeResume func(ctx context.Context) error

	wake chan struct{} // a failed request asks for a probe now

	mu   sync.Mutex
	down bool // the server did not answer the last probe: an outage
	// broken says that a watch's connection broke since the last probe
	// that answered: requests wait for the next one (answering), though
	// no probe failed yet; brokeAt and brokeEvents start the outage if
	// one fails.
	broken      bool
	brokeAt     time.Time
	brokeEvents uint64
	breaks      uint64 // counts the times broken was set
	lostAt      time.Time
	lostEvents  uint64
	answering   chan struct{} // closed when the server answers again
	probed      chan struct{} // closed and replaced after each probe
	outages     atomic.Uint64
	// interrupted holds the targets (by key) whose list or watch stopped
	// (a lost connection, a watch ended with an error), until a request
	// of theirs goes through again; moves counts its changes, so that a
	// report sees a target stop and resume between two looks.
	interrupted map[string]bool
	moves       uint64
	reports     sync.WaitGroup // the report of an outage's end, while pending
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

// run probes until ctx is done, and returns once a pending report of an
// outage's end has been logged or given up.
func (h *apiHealth) run(ctx context.Context) {
	defer h.reports.Wait()
	timer := time.NewTimer(probeEvery)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-h.wake:
		}
		breaks := h.breakCount() // a watch broken later needs a later probe
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := h.probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil && h.waiting(breaks) && h.beforeResume != nil {
			err = h.beforeResume(ctx)
			if ctx.Err() != nil {
				return
			}
		}
		h.record(ctx, err, breaks)
		every := probeEvery
		if err != nil {
			every = probeEveryDown
		}
		timer.Reset(every)
	}
}

// record takes a probe's result: a change of state is logged once.
// breaks is breakCount before the probe.
func (h *apiHealth) record(ctx context.Context, err error, breaks uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err != nil && !h.down:
		h.down, h.lostAt, h.lostEvents = true, time.Now(), h.eventsLen()
		if h.broken { // the outage began when the watch broke
			h.broken, h.lostAt, h.lostEvents = false, h.brokeAt, h.brokeEvents
		} else {
			h.answering = make(chan struct{})
		}
		h.outages.Add(1)
		h.onChange(false) // first: whoever reads the line finds readiness and the metric saying so
		h.log.Warn("lost the API server: watches wait for it and resume where they stopped", "err", err)
	case err == nil && h.down:
		h.down = false
		close(h.answering)
		h.onChange(true)
		end := outageEnd{outage: h.outages.Load(), lostAt: h.lostAt, answeredAt: time.Now(), lostEvents: h.lostEvents}
		h.reports.Go(func() { h.reportBack(ctx, end) })
	case err == nil && h.broken && h.breaks == breaks:
		// It answered at once, and the cluster was checked: no outage.
		h.broken = false
		close(h.answering)
	case err != nil:
		h.log.Debug("API server still not answering", "err", err)
	}
	close(h.probed)
	h.probed = make(chan struct{})
}

// outageEnd is what the line saying the server is back reports.
type outageEnd struct {
	outage             uint64 // which outage (apiHealth.outages)
	lostAt, answeredAt time.Time
	lostEvents         uint64 // events seen when the server was lost
}

// reportBack logs the end of an outage once the targets it interrupted
// have resumed and the changes the gap held have come (resumeWithin,
// settleQuiet), unless the server is lost again meanwhile: that outage
// goes on, and its end is reported instead.
func (h *apiHealth) reportBack(ctx context.Context, end outageEnd) {
	tick := time.NewTicker(reportPoll)
	defer tick.Stop()
	var resumedAt, quietSince time.Time
	lastEvents, lastMoves := h.eventsLen(), uint64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		h.mu.Lock()
		if h.down || h.outages.Load() != end.outage {
			h.mu.Unlock()
			return
		}
		waiting, moves := len(h.interrupted), h.moves
		h.mu.Unlock()
		events := h.eventsLen()
		if events != lastEvents || moves != lastMoves || waiting > 0 || quietSince.IsZero() {
			quietSince, lastEvents, lastMoves = now, events, moves
		}
		switch {
		case waiting > 0:
			resumedAt = time.Time{}
			if now.Sub(end.answeredAt) < resumeWithin {
				continue
			}
		case resumedAt.IsZero():
			resumedAt = now
			continue
		case now.Sub(quietSince) < settleQuiet && now.Sub(resumedAt) < settleWithin:
			continue
		}
		h.logBack(end, waiting, events, resumedAt)
		return
	}
}

// logBack is the line saying the server is back: how long it was lost,
// how many changes came since, and how long the watches took to resume
// after it answered (or how many have not, after resumeWithin).
func (h *apiHealth) logBack(end outageEnd, waiting int, events uint64, resumedAt time.Time) {
	attrs := []any{"outage", end.answeredAt.Sub(end.lostAt).Round(100 * time.Millisecond).String(),
		"changesSinceLost", events - end.lostEvents}
	if waiting > 0 {
		h.log.Warn("API server back, but some watches have not resumed yet: they retry with backoff", append(attrs, "notResumed", waiting)...)
		return
	}
	h.log.Info("API server back: watches resumed", append(attrs, "resumedIn", resumedAt.Sub(end.answeredAt).Round(100*time.Millisecond).String())...)
}

// interrupt records that target's list or watch stopped: its connection
// failed, or its watch ended with an error and a list follows.
func (h *apiHealth) interrupt(target string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.interruptLocked(target)
}

func (h *apiHealth) interruptLocked(target string) {
	if h.interrupted == nil {
		h.interrupted = map[string]bool{}
	}
	if !h.interrupted[target] {
		h.interrupted[target] = true
		h.moves++
	}
}

// resume records that a request of target's went through (its list, or
// the start of its watch), or that it is no longer watched.
func (h *apiHealth) resume(target string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.interrupted[target] {
		delete(h.interrupted, target)
		h.moves++
	}
}

// connected reports whether the server answered the last probe.
func (h *apiHealth) connected() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.down
}

// waiting reports whether lists and watches wait for a probe started
// when breakCount was breaks: the last one failed, or a watch broke
// before it started.
func (h *apiHealth) waiting(breaks uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down || h.broken && h.breaks == breaks
}

// breakCount is how many times a broken watch made requests wait.
func (h *apiHealth) breakCount() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.breaks
}

// watchBroke is told by target's watch that its connection broke: the
// target is interrupted, a probe is asked for, and until one answers (and
// beforeResume has run) every list and watch waits, as in an outage.
func (h *apiHealth) watchBroke(target string) {
	h.mu.Lock()
	h.interruptLocked(target)
	if !h.down && !h.broken {
		h.broken, h.brokeAt, h.brokeEvents = true, time.Now(), h.eventsLen()
		h.breaks++
		h.answering = make(chan struct{})
	}
	h.mu.Unlock()
	h.probeSoon()
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

// await returns at once while the server answers; while it does not, or
// a watch broke and no probe has answered since, it waits until one does
// (and then a moment more, spread over the targets). waited says whether
// it waited: then target counts as interrupted until a request of its
// goes through (resume).
func (h *apiHealth) await(ctx context.Context, target string) (waited bool, err error) {
	h.mu.Lock()
	wait, answering := h.down || h.broken, h.answering
	if wait {
		h.interruptLocked(target)
	}
	h.mu.Unlock()
	if !wait {
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
