// Command bench is kubediff's end-to-end benchmark (`make bench`): it starts
// a local control plane, fills it with objects, runs the kubediff binary
// against it, applies updates at a fixed rate and reports memory, CPU
// (kubediff's and the control plane's), sync time, write→emit latency and
// lost records, as a table on stdout and JSON in a file.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubediff/kubediff/internal/testenv"
)

type options struct {
	small, large int // ConfigMaps for the two memory points
	namespaces   int
	deployments  int
	updates      int
	rate         int // updates per second
	burst        int // updates sent as fast as possible afterwards
	// sideUpdates bounds the side-by-side phases (kubectl get -w, the
	// state dir): half of updates, at most this many.
	sideUpdates int
	binary, out string
	// Compare mode: these kubediffs (and the peers) side by side, rounds
	// times.
	compare  bool
	variants variants
	rounds   int
	peers    bool
	// noPeers skips the full mode's phase beside kubectl get -w and
	// kubewatch (-scale-peers=false).
	noPeers bool
	idle    time.Duration // after the last round, RSS again after this long idle
	// Types mode: CRDs, idle minutes watching them, namespaces of a glob.
	types, idleMinutes, globNamespaces int
	// fleet is -fleet: ConfigMaps in each of two clusters (fleet.go).
	fleet int
	// historyQueries is -history-queries: query loops against the
	// history API beside the live stream (historyload.go).
	historyQueries int
	// postgres starts a PostgreSQL for the variants (compare.go).
	postgres bool
}

func main() {
	// The kubediffs measured keep a state dir only where a measure names
	// one (--state-dir), never the default in the home of whoever runs it.
	os.Setenv("KUBEDIFF_STATE_DIR", "")
	var o options
	quick := flag.Bool("quick", false, "quick mode: under two minutes")
	scale := flag.Bool("scale", false, "scale mode: 300,000 objects over 100 namespaces, 500 updates/s for 60 s, then as fast as the server takes them (about 20 minutes)")
	scaleObjects := flag.Int("scale-objects", 300000, "with -scale, how many objects (ConfigMaps and 1,000 Deployments)")
	scalePeers := flag.Bool("scale-peers", true, "with -scale, run kubectl get -w and kubewatch beside kubediff (at 1,000,000 objects they and the API server need more than 24 GiB)")
	flag.IntVar(&o.small, "small", 2000, "ConfigMaps at the first memory point")
	flag.IntVar(&o.large, "large", 10000, "ConfigMaps at the second memory point")
	flag.IntVar(&o.namespaces, "namespaces", 10, "namespaces the objects are spread over")
	flag.IntVar(&o.deployments, "deployments", 200, "Deployments created")
	flag.IntVar(&o.updates, "updates", 3000, "updates applied at -rate")
	flag.IntVar(&o.rate, "rate", 100, "updates per second")
	flag.IntVar(&o.burst, "burst", 5000, "updates applied as fast as the API server takes them, after the paced ones")
	flag.IntVar(&o.sideUpdates, "side-updates", 1<<30, "at most this many updates in each side-by-side phase (kubectl, state dir)")
	flag.StringVar(&o.binary, "kubediff", "bin/kubediff", "kubediff binary to measure")
	flag.StringVar(&o.out, "out", "bench-results.json", "where to write the JSON results")
	flag.BoolVar(&o.compare, "compare", false, "compare mode: only the side-by-side rounds of -variant kubediffs (and -peers), on the large set")
	flag.Var(&o.variants, "variant", "with -compare, a kubediff to run: name|binary|K=V,...|args (binary empty: -kubediff; repeatable; the first is the reference)")
	flag.IntVar(&o.rounds, "rounds", 3, "with -compare, how many rounds")
	flag.BoolVar(&o.peers, "peers", false, "with -compare, also run kubectl get -w and kubewatch on ConfigMaps (make peers)")
	flag.DurationVar(&o.idle, "idle", 0, "with -compare, after the last round's updates wait this long idle and read every process's RSS again")
	flag.IntVar(&o.types, "types", 0, "types mode: create this many CRDs (ten kinds a group), time kubediff resources at 300 types and at all, time kubediff to watching them, read its RSS while idle")
	flag.IntVar(&o.idleMinutes, "idle-minutes", 10, "with -types, minutes kubediff stays idle watching every type")
	flag.IntVar(&o.fleet, "fleet", 0, "fleet mode: two clusters with this many ConfigMaps each, watched by one kubediff with both contexts and by one kubediff per context")
	flag.IntVar(&o.historyQueries, "history-queries", 0, "history-load mode: kubediff (or each -variant, side by side) with --state-dir; each of -rounds applies min(-updates, -side-updates) paced updates without history queries, then again for each kubediff while this many loops query its history API; prints each one's write→emit p99 both ways and their ratio")
	flag.BoolVar(&o.postgres, "postgres", false, "with -compare, start Debian's PostgreSQL 15 (make postgres) in a temporary directory and put its DSN where a -variant's args say $PGDSN (--history-store $PGDSN)")
	flag.IntVar(&o.globNamespaces, "namespaces-glob", 0, "with -types, then create this many namespaces team-N and time kubediff -n 'team-*' to watching")
	flag.Parse()
	switch {
	case *quick:
		o.small, o.large, o.namespaces, o.deployments, o.updates, o.burst = 1000, 3000, 4, 50, 1000, 1500
	case *scale:
		// 300,000 objects (ConfigMaps of the usual size and Deployments)
		// over 100 namespaces. The paced phase asks 500 updates a second
		// for a minute: at 2,000/s the local API server on 2 cores,
		// holding 300,000 objects, timed out PATCH requests after about
		// a minute (2026-11-23); the burst phase shows the most it takes.
		o.namespaces, o.deployments = 100, 1000
		o.small, o.large = *scaleObjects/2, *scaleObjects-o.deployments
		o.updates, o.rate, o.burst, o.sideUpdates = 30000, 500, 10000, 10000
		o.noPeers = !*scalePeers
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Results are what the benchmark reports.
type Results struct {
	Machine           string  `json:"machine"`
	ConfigMapsSmall   int     `json:"configMapsSmall"`
	ConfigMapsLarge   int     `json:"configMapsLarge"`
	ObjectsCached     int     `json:"objectsCached"`
	RawJSONBytesPerCM float64 `json:"rawJSONBytesPerConfigMap"`
	EmptyRSSMB        float64 `json:"emptyClusterRSSMB"`
	// Of which private memory (the rest: the binary's pages mapped).
	EmptyRSSAnonMB      float64 `json:"emptyClusterRSSAnonMB"`
	SyncSeconds         float64 `json:"syncSeconds"`
	RSSAfterSyncMB      float64 `json:"rssAfterSyncMB"`
	PeakRSSMB           float64 `json:"peakRSSMB"`
	PeakOverSteady      float64 `json:"peakOverSteady"`
	RSSPerObjectBytes   float64 `json:"rssPerObjectBytes"`
	RSSPerObjectOverRaw float64 `json:"rssPerObjectOverRawJSON"`
	Updates             int     `json:"updates"`
	AchievedRate        float64 `json:"achievedUpdatesPerSecond"`
	IdleCPUPercent      float64 `json:"kubediffIdleCPUPercentOfACore"`
	KubediffCPUPer1000  float64 `json:"kubediffCPUSecondsPer1000Updates"`
	KubectlCPUPer1000   float64 `json:"kubectlGetWatchCPUSecondsPer1000Updates"`
	KubewatchCPUPer1000 float64 `json:"kubewatchCPUSecondsPer1000Updates"`
	// The main kubediff's CPU in the phase beside the peers: the same
	// events at the same time as theirs.
	BesidePeersCPUPer1000 float64 `json:"kubediffCPUSecondsPer1000UpdatesBesidePeers"`
	// Latency in the phase beside kubectl, for both: a delay kubectl sees
	// too is the server's.
	KubectlLatencyP50Ms float64 `json:"kubectlLatencyP50Ms"`
	KubectlLatencyP99Ms float64 `json:"kubectlLatencyP99Ms"`
	BesideKubectlP50Ms  float64 `json:"kubediffLatencyBesideKubectlP50Ms"`
	BesideKubectlP99Ms  float64 `json:"kubediffLatencyBesideKubectlP99Ms"`
	APIServerCPUPer1000 float64 `json:"apiserverAndEtcdCPUSecondsPer1000Updates"`
	CPURatio            float64 `json:"kubediffOverControlPlaneCPU"`
	LatencyP50Ms        float64 `json:"latencyP50Ms"`
	LatencyP99Ms        float64 `json:"latencyP99Ms"`
	LatencyMaxMs        float64 `json:"latencyMaxMs"`
	Lost                int     `json:"lost"`
	BurstUpdates        int     `json:"burstUpdates"`
	BurstRate           float64 `json:"burstUpdatesPerSecond"`
	BurstLatencyMaxMs   float64 `json:"burstLatencyMaxMs"`
	// CPU in the burst includes the wait for the last records.
	BurstKubediffCPUPer1000 float64 `json:"burstKubediffCPUSecondsPer1000Updates"`
	BurstCPURatio           float64 `json:"burstKubediffOverControlPlaneCPU"`
	BurstLost               int     `json:"burstLost"`
	BurstPeakRSSMB          float64 `json:"burstPeakRSSMB"`
	RecordsAtStart          int     `json:"recordsForExistingObjects"`
	// The compressed cache against plain JSON (--compress-cache=false):
	// RSS per object by the same slope, and two kubediffs on the same
	// paced updates.
	PlainEmptyRSSMB          float64 `json:"plainEmptyClusterRSSMB"`
	PlainRSSPerObjectBytes   float64 `json:"plainRSSPerObjectBytes"`
	PlainRSSPerObjectOverRaw float64 `json:"plainRSSPerObjectOverRawJSON"`
	PlainSyncSeconds         float64 `json:"plainSyncSeconds"`
	PackedCPUPer1000         float64 `json:"compressedCPUSecondsPer1000Updates"`
	PlainCPUPer1000          float64 `json:"plainCPUSecondsPer1000Updates"`
	PackedRSSMB              float64 `json:"compressedRSSMB"`
	PlainRSSMB               float64 `json:"plainRSSMB"`
	// The state dir's cost: two kubediffs on the same paced updates, one
	// with --state-dir, one without.
	StateUpdates        int     `json:"stateUpdates"`
	StateCPUPer1000     float64 `json:"stateDirCPUSecondsPer1000Updates"`
	NoStateCPUPer1000   float64 `json:"noStateDirCPUSecondsPer1000Updates"`
	StateRSSMB          float64 `json:"stateDirRSSMB"`
	NoStateRSSMB        float64 `json:"noStateDirRSSMB"`
	StateFileMB         float64 `json:"stateFileMB"`
	StateSyncSeconds    float64 `json:"stateDirSyncSeconds"`
	StateRestartSeconds float64 `json:"stateDirRestartSyncSeconds"`
	StateRestartRecords int     `json:"stateDirRestartRecords"`
	StateRestartChanges int     `json:"stateDirRestartChanges"`
	StateLost           int     `json:"stateDirLost"`
}

func run(o options) error {
	if _, err := os.Stat(o.binary); err != nil {
		return fmt.Errorf("%s: %w (run make build)", o.binary, err)
	}
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stopping the control plane:", err)
		}
	}()
	b := &bench{o: o, env: env, cs: kubernetes.NewForConfigOrDie(withRate(env)), ctx: context.Background(),
		res: Results{Machine: machine(), ConfigMapsSmall: o.small, ConfigMapsLarge: o.large}}
	defer func() {
		if b.kd != nil {
			b.kd.stop()
		}
	}()
	phases := []func() error{b.emptyCluster, b.populate, b.withObjects, b.idle, b.paced}
	if !o.noPeers {
		phases = append(phases, b.besidePeers)
	}
	phases = append(phases, b.burst, b.besidePlain, b.besideState)
	full := !o.compare && o.types == 0 && o.fleet == 0 && o.historyQueries == 0
	if o.compare {
		phases = []func() error{b.createObjects, b.compare}
	}
	if o.types > 0 {
		phases = []func() error{b.typesScale}
	}
	if o.fleet > 0 {
		phases = []func() error{b.fleet}
	}
	if o.historyQueries > 0 {
		phases = []func() error{b.createObjects, b.historyLoad}
	}
	for _, phase := range phases {
		if err := phase(); err != nil {
			if full {
				// What the phases before measured is kept: a run of an
				// hour that fails in its last phase still says what it saw.
				printTable(os.Stdout, b.res)
				_ = b.writeResults()
			}
			return err
		}
		if full {
			if err := b.writeResults(); err != nil {
				return err
			}
		}
	}
	if full {
		printTable(os.Stdout, b.res)
	}
	return nil
}

// writeResults writes what the full mode measured so far to -out.
func (b *bench) writeResults() error {
	data, _ := json.MarshalIndent(b.res, "", "  ")
	return os.WriteFile(b.o.out, append(data, '\n'), 0o644)
}

// bench is one run's shared parts: the control plane, the namespaces, the
// main kubediff, and the results each phase fills in.
type bench struct {
	o     options
	env   *testenv.Env
	cs    *kubernetes.Clientset
	ctx   context.Context
	res   Results
	nss   []string
	small settled // kubediff with the small set
	kd    *kubediff
	first int // the next update's number: each phase changes new ones
}

// emptyCluster measures kubediff's RSS on an empty cluster, compressed
// cache and plain.
func (b *bench) emptyCluster() error {
	step("kubediff on an empty cluster")
	kd, err := startKubediff(b.o.binary, b.env.Kubeconfig)
	if err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // let the runtime settle after start
	b.res.EmptyRSSMB = mb(kd.rss())
	b.res.EmptyRSSAnonMB = mb(procStatus(kd.cmd.Process.Pid, "RssAnon"))
	kd.stop()
	emptyPlain, err := settledRSS(b.o.binary, b.env.Kubeconfig, "--compress-cache=false")
	b.res.PlainEmptyRSSMB = mb(emptyPlain.rss)
	return err
}

// populate creates the namespaces, Deployments and the small set of
// ConfigMaps, and measures kubediff with them.
func (b *bench) populate() error {
	if err := b.createSmall(); err != nil {
		return err
	}
	var err error
	if b.res.RawJSONBytesPerCM, err = rawBytesPerConfigMap(b.ctx, b.cs, b.nss[0]); err != nil {
		return err
	}
	step("kubediff with the small set, with and without --compress-cache")
	if b.small, err = settledRSS(b.o.binary, b.env.Kubeconfig); err != nil {
		return err
	}
	return nil
}

// createObjects creates the large set at once (compare mode).
func (b *bench) createObjects() error {
	if err := b.createSmall(); err != nil {
		return err
	}
	return b.createMore()
}

// createSmall creates the namespaces, Deployments and the small set of
// ConfigMaps.
func (b *bench) createSmall() error {
	o := b.o
	step(fmt.Sprintf("creating %d namespaces, %d Deployments, %d ConfigMaps", o.namespaces, o.deployments, o.small))
	for i := range o.namespaces {
		ns := fmt.Sprintf("bench-%d", i)
		b.nss = append(b.nss, ns)
		if _, err := b.cs.CoreV1().Namespaces().Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if err := parallel(o.deployments, func(i int) error { return createDeployment(b.ctx, b.cs, b.nss[i%len(b.nss)], i) }); err != nil {
		return err
	}
	return parallel(o.small, func(i int) error { return createConfigMap(b.ctx, b.cs, b.nss[i%len(b.nss)], i) })
}

// createMore creates the ConfigMaps from the small set to the large one.
func (b *bench) createMore() error {
	o := b.o
	step(fmt.Sprintf("creating %d more ConfigMaps", o.large-o.small))
	return parallel(o.large-o.small, func(i int) error { return createConfigMap(b.ctx, b.cs, b.nss[i%len(b.nss)], o.small+i) })
}

// withObjects measures RSS per object (the slope from the small set to
// the large one), plain and compressed, and starts the main kubediff.
func (b *bench) withObjects() error {
	o, res := b.o, &b.res
	smallPlain, err := settledRSS(o.binary, b.env.Kubeconfig, "--compress-cache=false")
	if err != nil {
		return err
	}
	if err := b.createMore(); err != nil {
		return err
	}
	step("kubediff with the large set, without --compress-cache")
	largePlain, err := settledRSS(o.binary, b.env.Kubeconfig, "--compress-cache=false")
	if err != nil {
		return err
	}
	res.PlainRSSPerObjectBytes = float64(largePlain.anon-smallPlain.anon) / float64(largePlain.objects-smallPlain.objects)
	res.PlainRSSPerObjectOverRaw = res.PlainRSSPerObjectBytes / res.RawJSONBytesPerCM
	res.PlainSyncSeconds = largePlain.synced.Seconds()
	step("kubediff with the large set")
	if b.kd, err = startKubediff(o.binary, b.env.Kubeconfig); err != nil {
		return err
	}
	kd := b.kd
	res.SyncSeconds = kd.synced.Seconds()
	time.Sleep(3 * time.Second)
	largeRSS := kd.rss()
	res.ObjectsCached = kd.objects
	res.RSSAfterSyncMB = mb(largeRSS)
	res.PeakRSSMB = mb(kd.hwm())
	res.PeakOverSteady = float64(kd.hwm()) / float64(largeRSS)
	// Per object, private memory: how many of the binary's pages a
	// process has mapped again since it released them varies by a few MB.
	res.RSSPerObjectBytes = float64(kd.anon()-b.small.anon) / float64(kd.objects-b.small.objects)
	res.RSSPerObjectOverRaw = res.RSSPerObjectBytes / res.RawJSONBytesPerCM
	res.RecordsAtStart = kd.recordCount()
	kd.heapProfile() // .1: after the sync
	return nil
}

// idle measures the main kubediff's CPU with nothing changing.
func (b *bench) idle() error {
	step("kubediff idle for 10 s")
	pid := []int{b.kd.cmd.Process.Pid}
	before := cpuSeconds(pid)
	time.Sleep(10 * time.Second)
	b.res.IdleCPUPercent = (cpuSeconds(pid) - before) / 10 * 100
	return nil
}

// paced measures CPU per update and latency at the paced rate, against
// the control plane's own CPU.
func (b *bench) paced() error {
	o, res := b.o, &b.res
	step(fmt.Sprintf("%d updates at %d/s", o.updates, o.rate))
	cpu, control := []int{b.kd.cmd.Process.Pid}, controlPlanePIDs()
	b.kd.toggleProfile()
	kdBefore, cpBefore := cpuSeconds(cpu), cpuSeconds(control)
	lat, lost, elapsed, err := applyUpdates(b.ctx, b.cs, b.kd, b.nss, o.large, 0, o.updates, o.rate)
	if err != nil {
		return err
	}
	kdCPU, cpCPU := cpuSeconds(cpu)-kdBefore, cpuSeconds(control)-cpBefore
	b.kd.toggleProfile()
	b.kd.heapProfile() // .2: after the paced phase
	res.Updates, res.Lost = o.updates, lost
	res.AchievedRate = float64(o.updates) / elapsed.Seconds()
	res.KubediffCPUPer1000 = kdCPU / float64(o.updates) * 1000
	res.APIServerCPUPer1000 = cpCPU / float64(o.updates) * 1000
	res.CPURatio = kdCPU / cpCPU
	res.LatencyP50Ms, res.LatencyP99Ms, res.LatencyMaxMs = percentile(lat, 0.50), percentile(lat, 0.99), percentile(lat, 1)
	b.first = o.updates
	return nil
}

// besidePeers runs the peers on the same updates, each watching only
// ConfigMaps: kubectl printing their names, and kubewatch with its
// default handler (which does nothing with an event). A phase of its own,
// so that serving their watches does not count in the control plane's
// CPU above.
func (b *bench) besidePeers() error {
	n := min(b.o.updates/2, b.o.sideUpdates)
	step(fmt.Sprintf("%d updates at %d/s with kubectl get -w and kubewatch watching too", n, b.o.rate))
	kw, err := startKubewatch(b.env)
	if err != nil {
		return err
	}
	defer kw.stop()
	pids := []int{kw.pid(), b.kd.cmd.Process.Pid}
	before := []float64{cpuSeconds(pids[:1]), cpuSeconds(pids[1:])}
	b.res.KubectlCPUPer1000, err = kubectlCPU(b.ctx, b.env, b.cs, b.kd, b.nss, b.o.large, b.first, n, b.o.rate, &b.res)
	b.res.KubewatchCPUPer1000 = (cpuSeconds(pids[:1]) - before[0]) / float64(n) * 1000
	b.res.BesidePeersCPUPer1000 = (cpuSeconds(pids[1:]) - before[1]) / float64(n) * 1000
	b.first += n
	return err
}

// burst measures updates as fast as the API server takes them.
func (b *bench) burst() error {
	o, res := b.o, &b.res
	step(fmt.Sprintf("%d updates as fast as the API server takes them", o.burst))
	cpu, control := []int{b.kd.cmd.Process.Pid}, controlPlanePIDs()
	kdBefore, cpBefore := cpuSeconds(cpu), cpuSeconds(control)
	lat, lost, elapsed, err := applyUpdates(b.ctx, b.cs, b.kd, b.nss, o.large, b.first, o.burst, 0)
	if err != nil {
		return err
	}
	res.BurstKubediffCPUPer1000 = (cpuSeconds(cpu) - kdBefore) / float64(o.burst) * 1000
	res.BurstCPURatio = (cpuSeconds(cpu) - kdBefore) / (cpuSeconds(control) - cpBefore)
	res.BurstUpdates, res.BurstLost = o.burst, lost
	res.BurstRate = float64(o.burst) / elapsed.Seconds()
	res.BurstLatencyMaxMs = percentile(lat, 1)
	res.BurstPeakRSSMB = mb(b.kd.hwm())
	b.kd.heapProfile() // .3: after the burst
	b.first += o.burst
	return nil
}

// besidePlain runs two more kubediffs on the same paced updates, one with
// --compress-cache=false: the compressed cache's cost.
func (b *bench) besidePlain() error {
	n := min(b.o.updates/2, b.o.sideUpdates)
	step(fmt.Sprintf("%d updates at %d/s with two more kubediffs, one with --compress-cache=false", n, b.o.rate))
	plain, c, err := beside(b.ctx, b.o, b.env, b.cs, b.kd, b.nss, "plain", nil, b.first, n, "--compress-cache=false")
	if err != nil {
		return err
	}
	plain.stop()
	b.res.PackedCPUPer1000, b.res.PlainCPUPer1000 = c.refCPU, c.cpu
	b.res.PackedRSSMB, b.res.PlainRSSMB = c.refRSS, c.rss
	b.first += n
	return nil
}

// besideState runs two more kubediffs, one keeping a state dir: its cost.
func (b *bench) besideState() error {
	n := min(b.o.updates/2, b.o.sideUpdates)
	step(fmt.Sprintf("%d updates at %d/s with two more kubediffs, one keeping a state dir", n, b.o.rate))
	return stateCost(b.ctx, &b.res, b.o, b.env, b.cs, b.kd, b.nss, b.first, n)
}

// stateCost measures what --state-dir costs: a kubediff keeping a state
// dir runs beside one that does not (beside), then is stopped, misses
// count updates, and is started again: its restart time and the changes
// it then reports.
func stateCost(ctx context.Context, res *Results, o options, env *testenv.Env, cs *kubernetes.Clientset, kd *kubediff, nss []string, first, count int) error {
	dir, err := os.MkdirTemp("", "kubediff-bench-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The steady state's cost: past the first write of every object,
	// which at 300,000 objects takes a while.
	stateFile := filepath.Join(dir, "state.db")
	firstWrite := func() {
		for last := int64(-1); fileSize(stateFile) != last; time.Sleep(3 * time.Second) {
			last = fileSize(stateFile)
		}
	}
	withState, c, err := beside(ctx, o, env, cs, kd, nss, "state", firstWrite, first, count, "--state-dir", dir)
	if err != nil {
		return err
	}
	defer withState.stop()
	res.StateSyncSeconds = withState.synced.Seconds()
	res.StateUpdates = count
	res.NoStateCPUPer1000, res.StateCPUPer1000 = c.refCPU, c.cpu
	res.NoStateRSSMB, res.StateRSSMB = c.refRSS, c.rss
	res.StateLost = count - withState.seenRange(first, count)
	withState.stop()
	if info, err := os.Stat(filepath.Join(dir, "state.db")); err == nil {
		res.StateFileMB = mb(info.Size())
	}

	// Down for a while: a tenth of the updates go by.
	missed := max(count/10, 1)
	if _, _, _, err := applyUpdates(ctx, cs, kd, nss, o.large, first+count, missed, o.rate); err != nil {
		return err
	}
	restarted, err := startKubediff(o.binary, env.Kubeconfig, "--state-dir", dir)
	if err != nil {
		return err
	}
	defer restarted.stop()
	res.StateRestartSeconds = restarted.synced.Seconds()
	res.StateRestartChanges = missed
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && restarted.seenRange(first+count, missed) < missed {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // anything more would be bogus
	res.StateRestartRecords = restarted.recordCount()
	return nil
}

// beside starts two more kubediffs at once, one with the default flags
// and one with args, and runs count paced updates with both watching: the
// CPU each spent per 1,000 updates, and their RSS, on the same events at
// the same time and with the same history (a process just synced collects
// garbage more often than one that has run for a while, so the long-running
// kd is no fair reference). The one with args is returned still running.
func beside(ctx context.Context, o options, env *testenv.Env, cs *kubernetes.Clientset, kd *kubediff, nss []string, name string, settled func(), first, count int, args ...string) (second *kubediff, c comparison, err error) {
	ref, err := startProfiled(name+"-reference", o.binary, env.Kubeconfig)
	if err != nil {
		return nil, c, err
	}
	defer ref.stop()
	second, err = startProfiled(name, o.binary, env.Kubeconfig, args...)
	if err != nil {
		return nil, c, err
	}
	time.Sleep(3 * time.Second) // past the sync
	if settled != nil {
		settled()
	}
	pids := []int{ref.cmd.Process.Pid, second.cmd.Process.Pid}
	ref.toggleProfile()
	second.toggleProfile()
	before := []float64{cpuSeconds(pids[:1]), cpuSeconds(pids[1:])}
	if _, _, _, err := applyUpdates(ctx, cs, kd, nss, o.large, first, count, o.rate); err != nil {
		second.stop()
		return nil, c, err
	}
	ref.toggleProfile()
	second.toggleProfile()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && (second.seenRange(first, count) < count || ref.seenRange(first, count) < count); {
		time.Sleep(100 * time.Millisecond)
	}
	c.refCPU = (cpuSeconds(pids[:1]) - before[0]) / float64(count) * 1000
	c.cpu = (cpuSeconds(pids[1:]) - before[1]) / float64(count) * 1000
	c.refRSS, c.rss = mb(ref.rss()), mb(second.rss())
	return second, c, nil
}

// comparison is two kubediffs side by side: CPU per 1,000 updates and
// RSS, of the one with the flags compared and of the reference.
type comparison struct{ cpu, refCPU, rss, refRSS float64 }

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// settled is a kubediff's memory once synced and settled.
type settled struct {
	rss     int64
	anon    int64 // of rss, private memory: what cached objects take
	objects int
	synced  time.Duration
}

// settledRSS starts kubediff with args, reads its RSS 3 s after sync, and
// stops it.
func settledRSS(binary, kubeconfig string, args ...string) (settled, error) {
	kd, err := startKubediff(binary, kubeconfig, args...)
	if err != nil {
		return settled{}, err
	}
	defer kd.stop()
	time.Sleep(3 * time.Second)
	return settled{rss: kd.rss(), anon: kd.anon(), objects: kd.objects, synced: kd.synced}, nil
}

// kubectlCPU runs kubectl get -w on ConfigMaps while count updates are
// applied, and returns its CPU seconds per 1,000 updates. It also times
// when kubectl and kubediff each saw every update: the same events from
// the same server at the same time, so a delay both see is the server's.
func kubectlCPU(ctx context.Context, env *testenv.Env, cs *kubernetes.Clientset, kd *kubediff, nss []string, objects, first, count, rate int, res *Results) (float64, error) {
	k, err := startKubectlWatch(env)
	if err != nil {
		return 0, err
	}
	defer k.stop()
	k.waitInitialList(objects)
	pid := []int{k.cmd.Process.Pid}
	before := cpuSeconds(pid)
	kdLat, _, _, written, err := applyUpdatesTimed(ctx, cs, kd, nss, objects, first, count, rate)
	if err != nil {
		return 0, err
	}
	cpu := (cpuSeconds(pid) - before) / float64(count) * 1000
	name := func(i int) string { return fmt.Sprintf("configmap/cm-%d", (first+i)%objects) }
	kubectlLat := k.latencies(count, name, written)
	res.KubectlLatencyP50Ms, res.KubectlLatencyP99Ms = percentile(kubectlLat, 0.50), percentile(kubectlLat, 0.99)
	res.BesideKubectlP50Ms, res.BesideKubectlP99Ms = percentile(kdLat, 0.50), percentile(kdLat, 0.99)
	return cpu, nil
}

// kubectlWatch is `kubectl get configmaps -A -w -o name`, noting when it
// prints each name.
type kubectlWatch struct {
	cmd   *exec.Cmd
	lines atomic.Int64
	mu    sync.Mutex
	seen  map[string]time.Time // configmap/NAME → when kubectl printed it
}

func startKubectlWatch(env *testenv.Env) (*kubectlWatch, error) {
	k := &kubectlWatch{seen: map[string]time.Time{}}
	k.cmd = exec.Command(env.Kubectl, "--kubeconfig", env.Kubeconfig, "get", "configmaps", "--all-namespaces", "--watch", "--output-watch-events", "-o", "name")
	out, err := k.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := k.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			k.lines.Add(1)
			// With -o name, kubectl prints only the name: after its
			// initial list, each line is a change.
			if f := strings.Fields(sc.Text()); len(f) > 0 {
				k.mu.Lock()
				k.seen[f[len(f)-1]] = time.Now()
				k.mu.Unlock()
			}
		}
	}()
	return k, nil
}

func (k *kubectlWatch) stop() { _ = k.cmd.Process.Kill(); _ = k.cmd.Wait() }

// waitInitialList returns past kubectl's initial list, every ConfigMap's
// name printed: at 300,000 objects that takes kubectl most of a minute,
// which must not count as the updates' CPU or latency.
func (k *kubectlWatch) waitInitialList(objects int) {
	for deadline := time.Now().Add(5 * time.Minute); k.lines.Load() < int64(objects) && time.Now().Before(deadline); {
		time.Sleep(time.Second)
	}
	for last := int64(-1); k.lines.Load() != last; time.Sleep(2 * time.Second) {
		last = k.lines.Load()
	}
	k.mu.Lock()
	clear(k.seen)
	k.mu.Unlock()
}

// latencies waits (up to 30 s) for kubectl to print the count updated
// names and returns each one's delay from its write.
func (k *kubectlWatch) latencies(count int, name func(int) string, written []time.Time) []time.Duration {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		k.mu.Lock()
		n := len(k.seen)
		k.mu.Unlock()
		if n >= count {
			break
		}
	}
	var lat []time.Duration
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range count {
		if at, ok := k.seen[name(i)]; ok {
			lat = append(lat, at.Sub(written[i]))
		}
	}
	return lat
}

// waitFor polls ok every 100 ms for up to seconds.
func waitFor(seconds int, ok func() bool) {
	for deadline := time.Now().Add(time.Duration(seconds) * time.Second); !ok() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
}

func step(s string) { fmt.Fprintf(os.Stderr, "» %s\n", s) }

// withRate lifts client-side rate limits: the benchmark drives the server.
func withRate(env *testenv.Env) *rest.Config {
	c := *env.Config
	c.QPS, c.Burst = 2000, 4000
	return &c
}

func parallel(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// createConfigMap makes a ConfigMap with about 1 KB of data.
func createConfigMap(ctx context.Context, cs *kubernetes.Clientset, ns string, i int) error {
	// A config file per key, as people write them: the same shape in
	// every ConfigMap, with values of their own (a service name, a random
	// token) that no compression can guess.
	data := map[string]string{"k": "v0"}
	for j := range 8 {
		data[fmt.Sprintf("setting-%d", j)] = fmt.Sprintf("endpoint=https://svc-%d.example.internal:8443/api/v%d\ntoken=%016x%016x\nretries=%d\ntimeout=30s\n", i, j, rand.Uint64(), rand.Uint64(), j)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Labels: map[string]string{"app": "bench"}}, Data: data}
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

func createDeployment(ctx context.Context, cs *kubernetes.Clientset, ns string, i int) error {
	labels := map[string]string{"app": fmt.Sprintf("app-%d", i)}
	replicas := int32(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example.com/app:1.0",
					Env: []corev1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "LOG_LEVEL", Value: "info"}},
				}}},
			},
		},
	}
	_, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	return err
}

// rawBytesPerConfigMap is the mean size of a ConfigMap as the server sends
// it in a list (compact JSON, managedFields included).
func rawBytesPerConfigMap(ctx context.Context, cs *kubernetes.Clientset, ns string) (float64, error) {
	raw, err := cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").Param("labelSelector", "app=bench").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(raw, &list); err != nil {
		return 0, err
	}
	total := 0
	for _, item := range list.Items {
		total += len(item)
	}
	return float64(total) / float64(len(list.Items)), nil
}

// applyUpdates patches count ConfigMaps (from index first, one each, with
// a unique value) at rate per second (0: as fast as possible), and waits
// for kubediff's record of each. It returns write→emit latencies, records
// lost, and how long the writes took.
func applyUpdates(ctx context.Context, cs *kubernetes.Clientset, kd *kubediff, nss []string, objects, first, count, rate int) ([]time.Duration, int, time.Duration, error) {
	lat, lost, elapsed, _, err := applyUpdatesTimed(ctx, cs, kd, nss, objects, first, count, rate)
	return lat, lost, elapsed, err
}

// applyUpdatesTimed is applyUpdates, also returning when each update was
// written.
func applyUpdatesTimed(ctx context.Context, cs *kubernetes.Clientset, kd *kubediff, nss []string, objects, first, count, rate int) (lat []time.Duration, lost int, elapsed time.Duration, written []time.Time, err error) {
	written = make([]time.Time, count)
	start := time.Now()
	write := func(i int) error {
		n := (first + i) % objects
		ns := nss[n%len(nss)]
		patch := fmt.Sprintf(`{"data":{"k":"u%d"}}`, first+i)
		written[i] = time.Now()
		_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, fmt.Sprintf("cm-%d", n), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	if rate > 0 {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		var wg sync.WaitGroup
		var firstErr error
		var mu sync.Mutex
		for i := range count {
			<-tick.C
			wg.Go(func() {
				if err := write(i); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			})
		}
		tick.Stop()
		wg.Wait()
		if firstErr != nil {
			return nil, 0, 0, nil, firstErr
		}
	} else if err := parallel(count, write); err != nil {
		return nil, 0, 0, nil, err
	}
	elapsed = time.Since(start)

	waitFor(60, func() bool { return kd.seenRange(first, count) >= count })
	for i := range count {
		if at, ok := kd.seenAt(first + i); ok {
			lat = append(lat, at.Sub(written[i]))
		}
	}
	return lat, count - len(lat), elapsed, written, nil
}

// kubediff is a running kubediff process and what it has printed.
type kubediff struct {
	cmd     *exec.Cmd
	synced  time.Duration
	syncCPU float64      // CPU seconds from start to synced
	types   atomic.Int64 // types watched, from the "watching" line
	// liveHeapMB is the heap live after the last GC (GODEBUG=gctrace=1).
	liveHeapMB atomic.Int64
	// watching counts "watching" lines: one per cluster.
	watching atomic.Int32
	peak     int64 // VmHWM before a compare round's updates
	objects  int

	mu       sync.Mutex
	httpAddr string // from the "serving health and metrics" line
	records  int
	seen     map[int]time.Time // update number → when its record was read
	done     chan struct{}
}

func startKubediff(binary, kubeconfig string, args ...string) (*kubediff, error) {
	return startProfiled("", binary, kubeconfig, args...)
}

// startProfiled is startKubediff for a process that writes its CPU
// profile to KUBEDIFF_CPUPROFILE.name (toggleProfile); name "" is the
// main one, which writes to KUBEDIFF_CPUPROFILE.
func startProfiled(name, binary, kubeconfig string, args ...string) (*kubediff, error) {
	return startCmd(name, exec.Command(binary, append(watchArgs(kubeconfig), args...)...), nil)
}

func watchArgs(kubeconfig string) []string {
	return []string{"watch", "-o", "json", "--kubeconfig", kubeconfig, "--http-address", ""}
}

// startCmd starts a kubediff watch command with extra environment
// variables and waits for it to sync.
func startCmd(name string, cmd *exec.Cmd, env []string) (*kubediff, error) {
	cmd.Env = withEnv(env)
	if path := os.Getenv("KUBEDIFF_CPUPROFILE"); path != "" && name != "" {
		cmd.Env = append(cmd.Env, "KUBEDIFF_CPUPROFILE="+path+"."+name)
	}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	kd := &kubediff{cmd: cmd, seen: map[int]time.Time{}, done: make(chan struct{})}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	synced := make(chan int, 1)
	go kd.readLogs(stderr, synced)
	go kd.readRecords(stdout)
	select {
	case kd.objects = <-synced:
		kd.synced = time.Since(start)
		kd.syncCPU = cpuSeconds([]int{cmd.Process.Pid})
	case <-time.After(5 * time.Minute):
		kd.stop()
		return nil, fmt.Errorf("kubediff did not sync within 5 minutes")
	}
	return kd, nil
}

// gcTrace reads the live heap from a gctrace line: "gc 12 @300.1s 0%:
// … 45->46->23 MB, 47 MB goal, …".
var gcTrace = regexp.MustCompile(`^gc \d+ @.* \d+->\d+->(\d+) MB`)

func (kd *kubediff) readLogs(r io.Reader, synced chan<- int) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "msg=watching") {
			_, after, _ := strings.Cut(line, "objects=")
			n, _ := strconv.Atoi(strings.Fields(after)[0])
			_, after, _ = strings.Cut(line, " types=")
			types, _ := strconv.Atoi(strings.Fields(after + " ")[0])
			kd.types.Store(int64(types))
			if kd.watching.Add(1) == 1 {
				synced <- n
			}
		} else if _, addr, ok := strings.Cut(line, `msg="serving health and metrics" address=`); ok {
			kd.mu.Lock()
			kd.httpAddr = strings.Fields(addr + " ")[0]
			kd.mu.Unlock()
		} else if m := gcTrace.FindStringSubmatch(line); m != nil {
			live, _ := strconv.ParseInt(m[1], 10, 64)
			kd.liveHeapMB.Store(live)
		} else if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			fmt.Fprintln(os.Stderr, "  kubediff:", line)
		}
	}
}

func (kd *kubediff) readRecords(r io.Reader) {
	defer close(kd.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		now := time.Now()
		var rec struct {
			Kind    string
			Changes []struct{ To any }
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		kd.mu.Lock()
		kd.records++
		if rec.Kind == "ConfigMap" && len(rec.Changes) == 1 {
			if s, ok := rec.Changes[0].To.(string); ok && strings.HasPrefix(s, "u") {
				if n, err := strconv.Atoi(s[1:]); err == nil {
					kd.seen[n] = now
				}
			}
		}
		kd.mu.Unlock()
	}
}

func (kd *kubediff) recordCount() int {
	kd.mu.Lock()
	defer kd.mu.Unlock()
	return kd.records
}

func (kd *kubediff) seenRange(first, count int) int {
	kd.mu.Lock()
	defer kd.mu.Unlock()
	n := 0
	for i := first; i < first+count; i++ {
		if _, ok := kd.seen[i]; ok {
			n++
		}
	}
	return n
}

// address is the host:port kubediff serves HTTP on, once logged.
func (kd *kubediff) address() string {
	kd.mu.Lock()
	defer kd.mu.Unlock()
	return kd.httpAddr
}

func (kd *kubediff) seenAt(i int) (time.Time, bool) {
	kd.mu.Lock()
	defer kd.mu.Unlock()
	t, ok := kd.seen[i]
	return t, ok
}

func (kd *kubediff) stop() {
	if kd.cmd.ProcessState != nil {
		return
	}
	_ = kd.cmd.Process.Signal(os.Interrupt)
	select {
	case <-kd.done:
	case <-time.After(30 * time.Second):
		_ = kd.cmd.Process.Kill()
	}
	_ = kd.cmd.Wait()
}

// heapProfile asks kubediff for a heap profile (KUBEDIFF_HEAPPROFILE.N),
// and gives it a moment to write it.
func (kd *kubediff) heapProfile() {
	if os.Getenv("KUBEDIFF_HEAPPROFILE") != "" {
		_ = kd.cmd.Process.Signal(syscall.SIGUSR2)
		time.Sleep(2 * time.Second)
	}
}

// toggleProfile starts or stops kubediff's CPU profile when the benchmark
// runs with KUBEDIFF_CPUPROFILE set (kubediff inherits it); without it,
// SIGUSR1 would end the process.
func (kd *kubediff) toggleProfile() {
	if os.Getenv("KUBEDIFF_CPUPROFILE") != "" {
		_ = kd.cmd.Process.Signal(syscall.SIGUSR1)
	}
}

func (kd *kubediff) rss() int64  { return procStatus(kd.cmd.Process.Pid, "VmRSS") }
func (kd *kubediff) anon() int64 { return procStatus(kd.cmd.Process.Pid, "RssAnon") }
func (kd *kubediff) hwm() int64  { return procStatus(kd.cmd.Process.Pid, "VmHWM") }

// procStatus reads a size field of /proc/PID/status, in bytes.
func procStatus(pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, field+":") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// cpuSeconds sums user and system time of processes from /proc/PID/stat.
func cpuSeconds(pids []int) float64 {
	const clockTicks = 100 // USER_HZ on Linux
	total := 0.0
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		total += (utime + stime) / clockTicks
	}
	return total
}

// controlPlanePIDs finds the kube-apiserver and etcd this benchmark started.
func controlPlanePIDs() []int {
	bin, _ := testenv.BinDir()
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue
		}
		if exe == filepath.Join(bin, "kube-apiserver") || exe == filepath.Join(bin, "etcd") {
			if ppid(pid) == os.Getpid() {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func ppid(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	n, _ := strconv.Atoi(fields[1])
	return n
}

func percentile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	i := int(float64(len(d)-1) * p)
	return float64(d[i].Microseconds()) / 1000
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func machine() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	model := ""
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "model name") {
			_, model, _ = strings.Cut(line, ": ")
			break
		}
	}
	n := strings.Count(string(data), "processor\t:")
	return fmt.Sprintf("%d × %s", n, model)
}

func printTable(w io.Writer, r Results) {
	rows := [][2]string{
		{"machine", r.Machine},
		{"objects cached (all types)", fmt.Sprint(r.ObjectsCached)},
		{"raw JSON per ConfigMap", fmt.Sprintf("%.0f B", r.RawJSONBytesPerCM)},
		{"RSS, empty cluster", fmt.Sprintf("%.1f MB, %.1f MB of it private (%.1f MB with --compress-cache=false)", r.EmptyRSSMB, r.EmptyRSSAnonMB, r.PlainEmptyRSSMB)},
		{"time to synced", fmt.Sprintf("%.2f s", r.SyncSeconds)},
		{"RSS after sync", fmt.Sprintf("%.1f MB", r.RSSAfterSyncMB)},
		{"peak RSS during sync (VmHWM)", fmt.Sprintf("%.1f MB (%.2fx steady)", r.PeakRSSMB, r.PeakOverSteady)},
		{fmt.Sprintf("RSS (private) per cached object (%d→%d ConfigMaps)", r.ConfigMapsSmall, r.ConfigMapsLarge), fmt.Sprintf("%.0f B (%.2fx raw JSON)", r.RSSPerObjectBytes, r.RSSPerObjectOverRaw)},
		{"  --compress-cache=false", fmt.Sprintf("%.0f B (%.2fx raw JSON); synced in %.2f s", r.PlainRSSPerObjectBytes, r.PlainRSSPerObjectOverRaw, r.PlainSyncSeconds)},
		{"records for objects existing at start", fmt.Sprint(r.RecordsAtStart)},
		{"paced updates", ifMeasured(r.Updates > 0, "%d at %.0f/s", r.Updates, r.AchievedRate)},
		{"kubediff CPU when idle", fmt.Sprintf("%.2f%% of a core", r.IdleCPUPercent)},
		{"kubediff CPU per 1000 updates", ifMeasured(r.Updates > 0, "%.3f s", r.KubediffCPUPer1000)},
		{"beside the peers, CPU per 1000 updates", ifMeasured(r.BesidePeersCPUPer1000 > 0, "kubediff %.3f s, kubectl get -w %.3f s, kubewatch %.3f s", r.BesidePeersCPUPer1000, r.KubectlCPUPer1000, r.KubewatchCPUPer1000)},
		{"  write→seen latency p50 / p99 in that phase", ifMeasured(r.BesidePeersCPUPer1000 > 0, "kubectl %.1f / %.1f ms, kubediff %.1f / %.1f ms", r.KubectlLatencyP50Ms, r.KubectlLatencyP99Ms, r.BesideKubectlP50Ms, r.BesideKubectlP99Ms)},
		{"kube-apiserver+etcd CPU per 1000 updates", ifMeasured(r.Updates > 0, "%.3f s", r.APIServerCPUPer1000)},
		{"kubediff / control plane CPU", ifMeasured(r.Updates > 0, "%.3f", r.CPURatio)},
		{"write→emit latency p50 / p99 / max", ifMeasured(r.Updates > 0, "%.1f / %.1f / %.1f ms", r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs)},
		{"records lost", ifMeasured(r.Updates > 0, "%d", r.Lost)},
		{"burst updates", ifMeasured(r.BurstUpdates > 0, "%d at %.0f/s, max latency %.0f ms, lost %d, peak RSS %.1f MB", r.BurstUpdates, r.BurstRate, r.BurstLatencyMaxMs, r.BurstLost, r.BurstPeakRSSMB)},
		{"burst: kubediff CPU per 1000 updates", ifMeasured(r.BurstUpdates > 0, "%.3f s (%.3f of the control plane's)", r.BurstKubediffCPUPer1000, r.BurstCPURatio)},
		{"compressed cache: CPU per 1000 updates (side by side)", ifMeasured(r.PlainCPUPer1000 > 0, "%.3f s, %.3f s plain (%.2fx)", r.PackedCPUPer1000, r.PlainCPUPer1000, r.PackedCPUPer1000/r.PlainCPUPer1000)},
		{"compressed cache: RSS", ifMeasured(r.PlainRSSMB > 0, "%.1f MB, %.1f MB plain (%.2fx)", r.PackedRSSMB, r.PlainRSSMB, r.PackedRSSMB/r.PlainRSSMB)},
		{fmt.Sprintf("state dir: CPU per 1000 updates (%d, side by side)", r.StateUpdates), ifMeasured(r.NoStateCPUPer1000 > 0, "%.3f s with, %.3f s without (%.2fx)", r.StateCPUPer1000, r.NoStateCPUPer1000, r.StateCPUPer1000/r.NoStateCPUPer1000)},
		{"state dir: RSS", ifMeasured(r.NoStateRSSMB > 0, "%.1f MB with, %.1f MB without (%.2fx); file %.1f MB; lost %d", r.StateRSSMB, r.NoStateRSSMB, r.StateRSSMB/r.NoStateRSSMB, r.StateFileMB, r.StateLost)},
		{"state dir: restart", ifMeasured(r.StateRestartSeconds > 0, "synced in %.2f s (first start %.2f s); %d records for %d changes made while down", r.StateRestartSeconds, r.StateSyncSeconds, r.StateRestartRecords, r.StateRestartChanges)},
	}
	for _, row := range rows {
		fmt.Fprintf(w, "%-54s %s\n", row[0], row[1])
	}
}

// ifMeasured formats a row's figures, or says they were not measured (a
// phase left out, or one after the phase that failed): never zeros that
// read as figures.
func ifMeasured(measured bool, format string, args ...any) string {
	if !measured {
		return "not measured"
	}
	return fmt.Sprintf(format, args...)
}
