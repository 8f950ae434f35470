// Package leader lets several kubediff replicas run with one emitting:
// the leader, elected through a coordination.k8s.io Lease, opens the
// pipeline's gate and publishes how far its sinks have delivered in a
// second Lease; followers keep their gates closed and trim what they hold
// to what the leader has not delivered, so that a new leader replays
// exactly that and no change is lost in a takeover.
package leader

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// progressAnnotation, on the progress Lease, holds the resourceVersion up
// to which the leader's sinks have handled every record.
const progressAnnotation = "kubediff.io/delivered-through"

// Gate is what the election opens and closes: the pipeline's leader gate
// (pipeline.Gate), which emits records while leading and holds them while
// following.
type Gate interface {
	// Lead makes the replica emit, first replaying held records newer
	// than through (all of them when through is 0).
	Lead(through uint64)
	// Follow makes the replica hold records.
	Follow()
	// Leading reports whether the replica emits.
	Leading() bool
	// Forget drops held records up to through: the leader delivered them.
	Forget(through uint64)
	// Through is how far the leader's sinks have handled every record.
	Through() uint64
}

// ProgressLeaseName is the Lease in which the leader of the election
// named name publishes its progress.
func ProgressLeaseName(name string) string { return name + "-progress" }

// Options configure the election.
type Options struct {
	Client    coordinationclient.CoordinationV1Interface
	Namespace string
	// Name of the election Lease; progress goes to Name + "-progress".
	Name     string
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod as in client-go.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// OnLeader is told when this replica starts (true) or stops leading.
	OnLeader func(bool)
	Log      *slog.Logger
}

// Elector takes part in the election for a gate.
type Elector struct {
	elector  *leaderelection.LeaderElector
	gate     Gate
	progress *progressLease
	retry    time.Duration
}

// New checks the options and prepares the election; Run takes part in it.
func New(gate Gate, o Options) (*Elector, error) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Client:     o.Client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	progress := &progressLease{client: o.Client.Leases(o.Namespace), name: ProgressLeaseName(o.Name), log: o.Log}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				// client-go may call OnStoppedLeading before this returns;
				// following again here leaves the gate closed either way.
				defer func() {
					gate.Follow()
					o.OnLeader(false)
				}()
				through, err := progress.read(ctx)
				if ctx.Err() != nil {
					return // leadership lost while reading
				}
				if err != nil {
					o.Log.Warn("cannot read the previous leader's progress: replaying every held record", "err", err)
				}
				gate.Lead(through)
				o.OnLeader(true)
				publish(ctx, gate, progress)
			},
			OnStoppedLeading: func() {
				gate.Follow()
				o.OnLeader(false)
				o.Log.Info("not leading: holding records for a takeover")
			},
			OnNewLeader: func(identity string) {
				if identity != o.Identity {
					o.Log.Info("following", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return &Elector{elector: elector, gate: gate, progress: progress, retry: o.RetryPeriod}, nil
}

// Run takes part in the election until ctx is done: leading, it opens the
// gate (replaying what the previous leader had not delivered) and
// publishes progress; following, it trims the gate's held records to what
// the leader has not yet delivered.
func (e *Elector) Run(ctx context.Context) {
	go trimWhileFollowing(ctx, e.gate, e.progress, e.retry)
	// The elector returns when leadership is lost; stand again until ctx
	// is done.
	for ctx.Err() == nil {
		e.elector.Run(ctx)
	}
}

// progressInterval is how often the leader publishes Through.
const progressInterval = time.Second

// publish writes the gate's progress until leadership ends.
func publish(ctx context.Context, gate Gate, p *progressLease) {
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
	last := uint64(0)
	for {
		select {
		case <-ctx.Done():
			// Final progress on a graceful handover (ctx here ends with
			// leadership; writing may still succeed).
			if through := gate.Through(); through != last {
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				_ = p.write(wctx, through)
				cancel()
			}
			return
		case <-tick.C:
			if through := gate.Through(); through != last {
				if err := p.write(ctx, through); err == nil {
					last = through
				}
			}
		}
	}
}

func trimWhileFollowing(ctx context.Context, gate Gate, p *progressLease, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if gate.Leading() {
				continue
			}
			if through, err := p.read(ctx); err == nil && through > 0 {
				gate.Forget(through)
			}
		}
	}
}

// progressLease stores the leader's progress in a Lease of its own, so that
// writing it never conflicts with the election's renewals.
type progressLease struct {
	client coordinationclient.LeaseInterface
	name   string
	log    *slog.Logger
}

func (p *progressLease) read(ctx context.Context) (uint64, error) {
	lease, err := p.client.Get(ctx, p.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil // no leader has published yet: replay everything held
	}
	if err != nil {
		return 0, err
	}
	v := lease.Annotations[progressAnnotation]
	if v == "" {
		return 0, nil
	}
	return strconv.ParseUint(v, 10, 64)
}

func (p *progressLease) write(ctx context.Context, through uint64) error {
	value := strconv.FormatUint(through, 10)
	lease, err := p.client.Get(ctx, p.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: p.name, Annotations: map[string]string{progressAnnotation: value}}}
		_, err = p.client.Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[progressAnnotation] = value
	_, err = p.client.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsConflict(err) {
		p.log.Warn("cannot publish delivery progress", "err", err)
	}
	return err
}
