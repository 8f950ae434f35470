package main

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

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

// compare runs the rounds: each process's CPU per 1,000 updates.
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
	cpu, syncs, syncCPU := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	p50, p99, peak := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	var order []string
	for round := range b.o.rounds {
		n := min(b.o.updates, b.o.sideUpdates)
		step(fmt.Sprintf("round %d: %d updates at %d/s", round+1, n, b.o.rate))
		got, names, synced, err := b.compareRound(rotate(vs, round), n)
		if err != nil {
			return err
		}
		for name, kd := range synced {
			syncs[name] = append(syncs[name], kd.synced.Seconds())
			syncCPU[name] = append(syncCPU[name], kd.syncCPU)
			peak[name] = append(peak[name], mb(kd.peak))
			p50[name] = append(p50[name], percentile(kd.latencies, 0.5))
			p99[name] = append(p99[name], percentile(kd.latencies, 0.99))
		}
		order = names
		for name, c := range got {
			cpu[name] = append(cpu[name], c)
		}
		printRound(round, names, got)
	}
	printMedians(order, cpu, vs[0].name)
	fmt.Println("median start to synced (time, CPU-s), peak RSS (VmHWM), write→emit latency p50 / p99")
	for _, v := range vs {
		fmt.Printf("  %-24s %.2f s  %.2f s  %.1f MB  %.1f / %.1f ms\n", v.name, median(syncs[v.name]), median(syncCPU[v.name]), median(peak[v.name]), median(p50[v.name]), median(p99[v.name]))
	}
	return nil
}

// compareRound starts every variant (in the order given: who starts first
// pays a little more for its sync, so the order rotates) and the peers,
// applies n updates and returns each one's CPU per 1,000 of them.
func (b *bench) compareRound(vs variants, n int) (cpu map[string]float64, names []string, synced map[string]*kubediff, err error) {
	pids, synced := map[string]int{}, map[string]*kubediff{}
	var kds []*kubediff
	defer func() {
		for _, kd := range kds {
			kd.stop()
		}
	}()
	for _, v := range vs {
		kd, err := startVariant(v, b.o.binary, b.env.Kubeconfig)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", v.name, err)
		}
		kds = append(kds, kd)
		synced[v.name] = kd
		pids[v.name] = kd.cmd.Process.Pid
	}
	stop, err := b.startPeers(pids)
	defer stop()
	if err != nil {
		return nil, nil, nil, err
	}
	waitCPUSettled(kds[0].cmd.Process.Pid)
	// A first update of a type costs each process once (kubediff reads the
	// type's OpenAPI schema for its list keys): not an update's cost.
	if err := b.warmUp(kds); err != nil {
		return nil, nil, nil, err
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
	_, lost, _, written, err := applyUpdatesTimed(b.ctx, b.cs, kds[0], b.nss, b.o.large, b.first, n, b.o.rate)
	if err != nil {
		return nil, nil, nil, err
	} else if lost > 0 {
		return nil, nil, nil, fmt.Errorf("%s lost %d of %d updates", vs[0].name, lost, n)
	}
	for i, kd := range kds {
		if miss := n - waitSeen(kd, b.first, n); miss > 0 {
			return nil, nil, nil, fmt.Errorf("%s lost %d of %d updates", vs[i].name, miss, n)
		}
		kd.latencies = kd.latencies[:0]
		for j := range n {
			at, _ := kd.seenAt(b.first + j)
			kd.latencies = append(kd.latencies, at.Sub(written[j]))
		}
	}
	b.first += n
	got := map[string]float64{}
	for name, pid := range pids {
		got[name] = (cpuSeconds([]int{pid}) - before[name]) / float64(n) * 1000
	}
	return got, names, synced, nil
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

// startPeers starts kubectl get -w and kubewatch when -peers is set.
func (b *bench) startPeers(pids map[string]int) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	if !b.o.peers {
		return stop, nil
	}
	k, err := startKubectlWatch(b.env)
	if err != nil {
		return stop, err
	}
	stops = append(stops, k.stop)
	k.waitInitialList(b.o.large)
	pids["kubectl get -w"] = k.cmd.Process.Pid
	kw, err := startKubewatch(b.env)
	if err != nil {
		return stop, err
	}
	stops = append(stops, kw.stop)
	pids["kubewatch"] = kw.pid()
	return stop, nil
}

func startVariant(v variant, defaultBinary, kubeconfig string) (*kubediff, error) {
	bin := v.binary
	if bin == "" {
		bin = defaultBinary
	}
	return startCmd(v.name, exec.Command(bin, append(watchArgs(kubeconfig), v.args...)...), v.env)
}

func waitSeen(kd *kubediff, first, n int) int {
	waitFor(30, func() bool { return kd.seenRange(first, n) >= n })
	return kd.seenRange(first, n)
}

func rotate(vs variants, by int) variants {
	by %= len(vs)
	return append(append(variants{}, vs[by:]...), vs[:by]...)
}

func printRound(round int, names []string, got map[string]float64) {
	var parts []string
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.3f", name, got[name]))
	}
	fmt.Printf("round %d (CPU-s per 1,000 updates): %s\n", round+1, strings.Join(parts, ", "))
}

func printMedians(names []string, cpu map[string][]float64, ref string) {
	fmt.Println("median CPU-s per 1,000 updates, and the ratio to", ref)
	for _, name := range names {
		m := median(cpu[name])
		fmt.Printf("  %-24s %.3f  %.2fx\n", name, m, m/median(cpu[ref]))
	}
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
