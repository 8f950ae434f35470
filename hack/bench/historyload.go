package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// History-load mode (-history-queries N): what reading the history costs
// the live stream. Each kubediff (the -kubediff binary, or each -variant)
// keeps a state dir (history on) and serves its history API, all running
// at once on the same updates. Each round applies the same number of
// paced updates in one quiet phase and, for each kubediff in turn, one
// phase while N loops ask its history API as fast as it answers (records
// of a namespace, an object at a moment, an object's two-moment diff, in
// turn); the phases' order rotates from round to round. Each phase's
// write→emit latency, CPU per 1,000 updates and the queries answered are
// printed, then for each kubediff the medians and the ratio of its
// loaded p99 to its quiet one, which issue 33 bounds at 2×. Side by side
// in the same run, a change to kubediff is measured under the same load
// from the rest of the machine.

// historyTarget is one kubediff of the mode and its history API.
type historyTarget struct {
	name string
	kd   *kubediff
	api  *historyAPI
	dir  string
	// The medians' inputs: "p50", "p99", "cpu", "qps" of each phase,
	// quiet and loaded.
	quiet, loaded map[string][]float64
}

// historyPhase is one phase's figures for one kubediff.
type historyPhase struct {
	p50, p99, max float64 // write→emit latency, ms
	cpu           float64 // kubediff's CPU-s per 1,000 updates
}

// phaseLoad is what the machine did during a phase: CPU-s per second of
// the control plane, the benchmark's own (its query loops and record
// reader) and the machine's (all cores, all processes), and the queries.
type phaseLoad struct {
	controlPlane, self, machine float64
	queries                     queryFigures
}

// historyLoad runs the rounds.
func (b *bench) historyLoad() error {
	token, err := b.historyReader()
	if err != nil {
		return err
	}
	vs := b.o.variants
	if len(vs) == 0 {
		vs = variants{{name: "kubediff"}}
	}
	var targets []*historyTarget
	defer func() {
		for _, t := range targets {
			t.kd.stop()
			_ = os.RemoveAll(t.dir)
		}
	}()
	for _, v := range vs {
		t, err := b.startHistoryTarget(v, token)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		targets = append(targets, t)
	}
	kds := make([]*kubediff, len(targets))
	for i, t := range targets {
		kds[i] = t.kd
	}
	if err := b.warmUp(kds); err != nil {
		return err
	}
	n := min(b.o.updates, b.o.sideUpdates)
	for round := range b.o.rounds {
		// -1: the quiet phase; i: targets[i] queried.
		phases := make([]int, 0, len(targets)+1)
		for i := -1; i < len(targets); i++ {
			phases = append(phases, i)
		}
		for _, loaded := range rotateInts(phases, round) {
			if err := b.historyPhase(round, targets, loaded, n); err != nil {
				return err
			}
		}
	}
	for _, t := range targets {
		fmt.Printf("%s, medians over %d rounds: quiet p50 / p99 %.1f / %.1f ms, CPU %.3f s per 1,000 updates; with %d query loops p50 / p99 %.1f / %.1f ms, CPU %.3f s, %.0f queries/s\n",
			t.name, b.o.rounds, median(t.quiet["p50"]), median(t.quiet["p99"]), median(t.quiet["cpu"]), b.o.historyQueries, median(t.loaded["p50"]), median(t.loaded["p99"]), median(t.loaded["cpu"]), median(t.loaded["qps"]))
		fmt.Printf("%s: p99 with the queries / without: %.2fx (median of the rounds' p99s); peak RSS (VmHWM) %.1f MB, state file %.1f MB\n",
			t.name, median(t.loaded["p99"])/median(t.quiet["p99"]), mb(t.kd.hwm()), mb(fileSize(filepath.Join(t.dir, "state.db"))))
	}
	return nil
}

// startHistoryTarget starts a variant with a state dir of its own and
// its HTTP address on a free port of 127.0.0.1.
func (b *bench) startHistoryTarget(v variant, token string) (*historyTarget, error) {
	dir, err := os.MkdirTemp("", "kubediff-bench-history-")
	if err != nil {
		return nil, err
	}
	v.args = append([]string{"--state-dir", dir, "--http-address", "127.0.0.1:0"}, v.args...)
	kd, err := startVariant(v, b.o.binary, b.env.Kubeconfig)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	t := &historyTarget{name: v.name, kd: kd, dir: dir, quiet: map[string][]float64{}, loaded: map[string][]float64{}}
	waitFor(30, func() bool { return kd.address() != "" })
	if kd.address() == "" {
		return t, fmt.Errorf("kubediff logged no HTTP address")
	}
	t.api = &historyAPI{base: "http://" + kd.address() + "/api/v1/history/", token: token, nss: b.nss, objects: b.o.large, since: time.Now()}
	return t, nil
}

// historyPhase applies n paced updates with every target watching, the
// query loops asking targets[loaded] (none when loaded is -1), and
// prints and keeps each target's figures.
func (b *bench) historyPhase(round int, targets []*historyTarget, loaded, n int) error {
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	what := "no history queries"
	answered := (&historyAPI{}).run(ctx, 0)
	if loaded >= 0 {
		what = fmt.Sprintf("%d history query loops asking %s", b.o.historyQueries, targets[loaded].name)
		answered = targets[loaded].api.run(ctx, b.o.historyQueries)
		time.Sleep(time.Second) // the loops under way before the first update
		// KUBEDIFF_CPUPROFILE: the last loaded phase's profile.
		targets[loaded].kd.toggleProfile()
		defer targets[loaded].kd.toggleProfile()
	}
	step(fmt.Sprintf("round %d: %d updates at %d/s, %s", round+1, n, b.o.rate, what))
	pids, control, self := make([]int, len(targets)), controlPlanePIDs(), []int{os.Getpid()}
	for i, t := range targets {
		pids[i] = t.kd.cmd.Process.Pid
	}
	before := make([]float64, len(targets))
	for i := range targets {
		before[i] = cpuSeconds(pids[i : i+1])
	}
	cpBefore, selfBefore, machineBefore, start := cpuSeconds(control), cpuSeconds(self), machineCPU(), time.Now()
	_, _, _, written, err := applyUpdatesTimed(b.ctx, b.cs, targets[0].kd, b.nss, b.o.large, b.first, n, b.o.rate)
	if err != nil {
		return err
	}
	took := time.Since(start).Seconds()
	load := phaseLoad{controlPlane: (cpuSeconds(control) - cpBefore) / took, self: (cpuSeconds(self) - selfBefore) / took, machine: (machineCPU() - machineBefore) / took}
	cancel()
	load.queries = <-answered
	for i, t := range targets {
		if miss := n - waitSeen(t.kd, b.first, n); miss > 0 {
			return fmt.Errorf("%s lost %d of %d updates", t.name, miss, n)
		}
		lat := latencies(t.kd, b.first, written)
		ph := historyPhase{p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), max: percentile(lat, 1),
			cpu: (cpuSeconds(pids[i:i+1]) - before[i]) / float64(n) * 1000}
		t.keep(loaded, i, ph, load)
		printHistoryPhase(round, t.name, loaded, i, ph, load)
	}
	b.first += n
	for _, t := range targets {
		t.api.updated = b.first
	}
	return nil
}

// keep adds a phase's figures to the medians' inputs: target i's, with
// the kubediff loaded asked (-1: none). Beside another kubediff's loaded
// phase, one is neither quiet nor loaded (the machine is as busy as that
// one's queries make it): printed, not kept.
func (t *historyTarget) keep(loaded, i int, ph historyPhase, load phaseLoad) {
	if loaded >= 0 && i != loaded {
		return
	}
	into := t.quiet
	if i == loaded {
		into = t.loaded
		into["qps"] = append(into["qps"], load.queries.perSecond)
	}
	into["p50"], into["p99"], into["cpu"] = append(into["p50"], ph.p50), append(into["p99"], ph.p99), append(into["cpu"], ph.cpu)
}

// latencies are write→emit times of the updates from first, written at
// written, as kd read their records.
func latencies(kd *kubediff, first int, written []time.Time) []time.Duration {
	lat := make([]time.Duration, 0, len(written))
	for j := range written {
		at, _ := kd.seenAt(first + j)
		lat = append(lat, at.Sub(written[j]))
	}
	return lat
}

func printHistoryPhase(round int, name string, loaded, i int, ph historyPhase, load phaseLoad) {
	what := "quiet"
	switch q := load.queries; {
	case i == loaded:
		what = fmt.Sprintf("queried %d times (%.0f/s; answers %s; p50 / p99 %.0f / %.0f ms)", q.count, q.perSecond, q.statuses(), q.p50, q.p99)
	case loaded >= 0:
		what = "beside another's queries"
	}
	fmt.Printf("round %d, %s %s: write→emit p50 / p99 / max %.1f / %.1f / %.1f ms, CPU %.3f s per 1,000 updates; cores busy: control plane %.2f, benchmark %.2f, machine %.2f\n",
		round+1, name, what, ph.p50, ph.p99, ph.max, ph.cpu, load.controlPlane, load.self, load.machine)
}

func rotateInts(xs []int, by int) []int {
	by %= len(xs)
	return append(append([]int{}, xs[by:]...), xs[:by]...)
}

// machineCPU is the CPU time all cores spent busy since boot, in
// seconds (/proc/stat: all but idle and iowait).
func machineCPU() float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	busy := 0.0
	for i, f := range strings.Fields(line)[1:] {
		if v, err := strconv.ParseFloat(f, 64); err == nil && i != 3 && i != 4 {
			busy += v
		}
	}
	return busy / 100 // USER_HZ
}

// historyReader makes a ServiceAccount that may list ConfigMaps in every
// namespace and returns a token for it: the API asks the API server
// about each caller as it would about a person's.
func (b *bench) historyReader() (string, error) {
	const name = "bench-history-reader"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := b.cs.CoreV1().ServiceAccounts("default").Create(b.ctx, sa, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}}
	if _, err := b.cs.RbacV1().ClusterRoles().Create(b.ctx, role, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}}
	if _, err := b.cs.RbacV1().ClusterRoleBindings().Create(b.ctx, binding, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	hour := int64(3600)
	tr, err := b.cs.CoreV1().ServiceAccounts("default").CreateToken(b.ctx, name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// historyAPI asks one kubediff's history API about the benchmark's
// ConfigMaps.
type historyAPI struct {
	base, token string
	nss         []string
	objects     int
	since       time.Time // kubediff's start: the diffs' first moment
	updated     int       // updates 0 … updated-1 were made (and reported)
	client      http.Client
}

// queryFigures is what the query loops of one phase got.
type queryFigures struct {
	count     int
	perSecond float64
	p50, p99  float64 // ms
	byStatus  map[int]int
}

func (q queryFigures) statuses() string {
	var parts []string
	for code, n := range q.byStatus {
		parts = append(parts, fmt.Sprintf("%d×%d", n, code))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// run starts loops query loops, which stop when ctx ends; their figures
// come on the channel once they all stopped.
func (a *historyAPI) run(ctx context.Context, loops int) <-chan queryFigures {
	out := make(chan queryFigures, 1)
	a.client.Transport = &http.Transport{MaxIdleConnsPerHost: max(loops, 1)}
	var mu sync.Mutex
	var took []time.Duration
	q := queryFigures{byStatus: map[int]int{}}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range loops {
		wg.Go(func() {
			for kind := i; ctx.Err() == nil; kind++ {
				began := time.Now()
				code := a.ask(ctx, kind%3)
				if ctx.Err() != nil {
					return // cut short: not an answer
				}
				mu.Lock()
				took = append(took, time.Since(began))
				q.byStatus[code]++
				mu.Unlock()
			}
		})
	}
	go func() {
		wg.Wait()
		q.count = len(took)
		q.perSecond = float64(q.count) / time.Since(start).Seconds()
		q.p50, q.p99 = percentile(took, 0.5), percentile(took, 0.99)
		out <- q
	}()
	return out
}

// ask makes one query of a kind (0 records, 1 object at a moment, 2
// diff) about a ConfigMap already updated, and returns the status (0 when
// no answer came).
func (a *historyAPI) ask(ctx context.Context, kind int) int {
	n := rand.IntN(max(a.updated, 1)) % a.objects
	ns, object := a.nss[n%len(a.nss)], fmt.Sprintf("configmaps/cm-%d", n)
	now := time.Now().UTC()
	q := url.Values{"namespace": {ns}}
	path := ""
	switch kind {
	case 0:
		path = "records"
		q.Set("select", "configmaps")
		q.Set("from", now.Add(-time.Minute).Format(time.RFC3339Nano))
	case 1:
		path = "object"
		q.Set("object", object)
		q.Set("at", now.Add(-time.Second).Format(time.RFC3339Nano))
	default:
		path = "diff"
		q.Set("object", object)
		q.Set("from", a.since.UTC().Format(time.RFC3339Nano))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
