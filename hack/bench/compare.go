package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubediff/kubediff/internal/testpg"
)

// Compare mode (-compare): kubediff variants (another binary, environment
// or flags) and, with -peers, kubectl get -w and kubewatch, all watching
// at once while the same paced updates are applied, for several rounds.
// Each round prints every process's CPU per 1,000 updates; the end, each
// one's median and its ratio to the first variant's. The same events at
// the same time on the same cores: the fair way to tell what a change of
// kubediff's bought, on a machine whose control plane shares the cores.

// variant is one kubediff to compare: "name|binary|K=V,K=V|args".
type variant struct {
	name, binary string
	env, args    []string
}

type variants []variant

func (v *variants) String() string { return fmt.Sprint(*v) }

func (v *variants) Set(s string) error {
	f := strings.Split(s, "|")
	if len(f) < 2 || f[0] == "" {
		return fmt.Errorf("want name|binary[|K=V,...[|args]], got %q", s)
	}
	x := variant{name: f[0], binary: f[1]}
	if len(f) > 2 && f[2] != "" {
		x.env = strings.Split(f[2], ",")
	}
	if len(f) > 3 {
		x.args = strings.Fields(f[3])
	}
	*v = append(*v, x)
	return nil
}

// figures are one process's measures over the rounds (one value a round).
type figures struct {
	cpu, p50, p99, rss  []float64 // CPU-s per 1,000 updates; ms; MB after the updates
	anon                []float64 // MB of the RSS that is private (RssAnon): not the binary's pages
	sync, syncCPU, peak []float64 // kubediff only: start to synced (s, CPU-s), VmHWM (MB)
	idleRSS             float64   // MB after the last round's idle wait (0: none)
}

// compare runs the rounds and prints each process's medians, and each
// one's ratio to the first variant and to the peers.
func (b *bench) compare() error {
	vs := b.o.variants
	if len(vs) == 0 {
		vs = variants{{name: "kubediff"}}
	}
	if b.o.postgres {
		stop, err := withPostgres(vs)
		if err != nil {
			return err
		}
		defer stop()
	}
	got := map[string]*figures{}
	var names []string
	for round := range b.o.rounds {
		n := min(b.o.updates, b.o.sideUpdates)
		step(fmt.Sprintf("round %d: %d updates at %d/s", round+1, n, b.o.rate))
		idle := time.Duration(0)
		if round == b.o.rounds-1 {
			idle = b.o.idle
		}
		var err error
		if names, err = b.compareRound(rotate(vs, round), n, idle, got); err != nil {
			return err
		}
		printRound(round, names, got)
	}
	printMedians(names, got, vs[0].name)
	return nil
}

// compareRound starts every variant (in the order given: who starts first
// pays a little more for its sync, so the order rotates) and the peers,
// applies n updates, adds each process's figures to got, and returns
// their names. After the updates it waits idle, when not 0, and reads
// each one's RSS again.
func (b *bench) compareRound(vs variants, n int, idle time.Duration, got map[string]*figures) (names []string, err error) {
	pids, kds := map[string]int{}, map[string]*kubediff{}
	defer func() {
		for _, kd := range kds {
			kd.stop()
		}
	}()
	for _, v := range vs {
		kd, err := startVariant(v, b.o.binary, b.env.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
		kds[v.name], pids[v.name] = kd, kd.cmd.Process.Pid
	}
	kubectl, stop, err := b.startPeers(pids)
	defer stop()
	if err != nil {
		return nil, err
	}
	first := kds[vs[0].name]
	waitCPUSettled(first.cmd.Process.Pid)
	// A first update of a type costs each process once (kubediff reads the
	// type's OpenAPI schema for its list keys): not an update's cost.
	ordered := []*kubediff{first}
	for _, v := range vs[1:] {
		ordered = append(ordered, kds[v.name])
	}
	if err := b.warmUp(ordered); err != nil {
		return nil, err
	}
	for _, kd := range kds {
		kd.peak = kd.hwm()
		kd.toggleProfile()
		defer kd.toggleProfile()
	}
	before := map[string]float64{}
	for name, pid := range pids {
		before[name] = cpuSeconds([]int{pid})
		names = append(names, name)
	}
	sort.Strings(names)
	_, lost, _, written, err := applyUpdatesTimed(b.ctx, b.cs, first, b.nss, b.o.large, b.first, n, b.o.rate)
	if err != nil {
		return nil, err
	} else if lost > 0 {
		return nil, fmt.Errorf("%s lost %d of %d updates", vs[0].name, lost, n)
	}
	for name, kd := range kds {
		if miss := n - waitSeen(kd, b.first, n); miss > 0 {
			return nil, fmt.Errorf("%s lost %d of %d updates", name, miss, n)
		}
		f := figuresOf(got, name)
		lat := make([]time.Duration, 0, n)
		for j := range n {
			at, _ := kd.seenAt(b.first + j)
			lat = append(lat, at.Sub(written[j]))
		}
		f.p50, f.p99 = append(f.p50, percentile(lat, 0.5)), append(f.p99, percentile(lat, 0.99))
		f.sync, f.syncCPU, f.peak = append(f.sync, kd.synced.Seconds()), append(f.syncCPU, kd.syncCPU), append(f.peak, mb(kd.peak))
	}
	if kubectl != nil {
		first := b.first
		lat := kubectl.latencies(n, func(i int) string { return fmt.Sprintf("configmap/cm-%d", (first+i)%b.o.large) }, written)
		f := figuresOf(got, kubectlName)
		f.p50, f.p99 = append(f.p50, percentile(lat, 0.5)), append(f.p99, percentile(lat, 0.99))
	}
	b.first += n
	for name, pid := range pids {
		f := figuresOf(got, name)
		f.cpu = append(f.cpu, (cpuSeconds([]int{pid})-before[name])/float64(n)*1000)
		f.rss = append(f.rss, mb(procStatus(pid, "VmRSS")))
		f.anon = append(f.anon, mb(procStatus(pid, "RssAnon")))
	}
	if idle > 0 {
		step(fmt.Sprintf("idle for %s", idle))
		time.Sleep(idle)
		for name, pid := range pids {
			figuresOf(got, name).idleRSS = mb(procStatus(pid, "VmRSS"))
		}
	}
	return names, nil
}

func figuresOf(got map[string]*figures, name string) *figures {
	if got[name] == nil {
		got[name] = &figures{}
	}
	return got[name]
}

// warmUp applies a few updates and waits until every kubediff saw them.
func (b *bench) warmUp(kds []*kubediff) error {
	const n = 20
	if _, _, _, err := applyUpdates(b.ctx, b.cs, kds[0], b.nss, b.o.large, b.first, n, b.o.rate); err != nil {
		return err
	}
	for _, kd := range kds {
		waitSeen(kd, b.first, n)
	}
	b.first += n
	return nil
}

// The peers' names in the figures.
const (
	kubectlName   = "kubectl get -w"
	kubewatchName = "kubewatch"
)

// startPeers starts kubectl get -w and kubewatch when -peers is set, and
// returns kubectl's watch (nil without -peers) for its latency.
func (b *bench) startPeers(pids map[string]int) (kubectl *kubectlWatch, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	if !b.o.peers {
		return nil, stop, nil
	}
	k, err := startKubectlWatch(b.env)
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, k.stop)
	k.waitInitialList(b.o.large)
	pids[kubectlName] = k.cmd.Process.Pid
	kw, err := startKubewatch(b.env)
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, kw.stop)
	pids[kubewatchName] = kw.pid()
	return k, stop, nil
}

func startVariant(v variant, defaultBinary, kubeconfig string) (*kubediff, error) {
	bin := v.binary
	if bin == "" {
		bin = defaultBinary
	}
	args := slices.Clone(v.args)
	for i, a := range args {
		if strings.Contains(a, "$STATEDIR") { // a fresh state dir for each start
			dir, err := os.MkdirTemp("", "kubediff-bench-state-")
			if err != nil {
				return nil, err
			}
			args[i] = strings.ReplaceAll(a, "$STATEDIR", dir)
		}
	}
	return startCmd(v.name, exec.Command(bin, append(watchArgs(kubeconfig), args...)...), v.env)
}

func waitSeen(kd *kubediff, first, n int) int {
	waitFor(30, func() bool { return kd.seenRange(first, n) >= n })
	return kd.seenRange(first, n)
}

func rotate(vs variants, by int) variants {
	by %= len(vs)
	return append(append(variants{}, vs[by:]...), vs[:by]...)
}

func printRound(round int, names []string, got map[string]*figures) {
	var parts []string
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.3f", name, last(got[name].cpu)))
	}
	fmt.Printf("round %d (CPU-s per 1,000 updates): %s\n", round+1, strings.Join(parts, ", "))
}

// printMedians prints each process's medians over the rounds: CPU per
// 1,000 updates and its ratio to ref's and to each peer's, write→record
// latency, RSS after the updates (and after the idle wait), and for
// kubediffs the sync.
func printMedians(names []string, got map[string]*figures, ref string) {
	refs := []string{ref}
	for _, peer := range []string{kubewatchName, kubectlName} {
		if got[peer] != nil {
			refs = append(refs, peer)
		}
	}
	fmt.Printf("medians over %d rounds; CPU-s per 1,000 updates and its ratio to %s\n", len(got[ref].cpu), strings.Join(refs, ", "))
	fmt.Printf("  %-24s %6s %-22s %9s %9s %8s %8s %8s %s\n", "process", "CPU", "ratios", "p50 ms", "p99 ms", "RSS MB", "private", "idle MB", "synced (s, CPU-s, peak MB)")
	for _, name := range names {
		f := got[name]
		var ratios []string
		for _, r := range refs {
			ratios = append(ratios, fmt.Sprintf("%.2fx", median(f.cpu)/median(got[r].cpu)))
		}
		synced := ""
		if len(f.sync) > 0 {
			synced = fmt.Sprintf("%.2f, %.2f, %.1f", median(f.sync), median(f.syncCPU), median(f.peak))
		}
		fmt.Printf("  %-24s %6.3f %-22s %9s %9s %8.1f %8.1f %8s %s\n", name, median(f.cpu), strings.Join(ratios, " "),
			orDash(f.p50), orDash(f.p99), median(f.rss), median(f.anon), idleOrDash(f.idleRSS), synced)
	}
}

// orDash is the median of ms, or "-" when the process was not timed
// (kubewatch prints nothing to time).
func orDash(ms []float64) string {
	if len(ms) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", median(ms))
}

func idleOrDash(mb float64) string {
	if mb == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", mb)
}

func last(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)-1]
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// env is os.Environ with extra variables.
func withEnv(extra []string) []string { return append(os.Environ(), extra...) }

// withPostgres starts a PostgreSQL for the variants' history store and
// puts its DSN where their args say $PGDSN.
func withPostgres(vs variants) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "kubediff-bench-postgres-")
	if err != nil {
		return nil, err
	}
	pg, err := testpg.New(dir, "")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for i := range vs {
		for j, a := range vs[i].args {
			vs[i].args[j] = strings.ReplaceAll(a, "$PGDSN", pg.DSN)
		}
	}
	step("PostgreSQL on " + pg.DSN)
	return func() { pg.Stop(); _ = os.RemoveAll(dir) }, nil
}
