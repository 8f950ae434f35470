package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Types mode (-types N): discovery and watching at scale, as issue 24
// asks. CRDs are created in groups of ten kinds (an operator's), then:
// `kubediff resources` timed at about 300 types; kubediff started with N
// CRDs, timed to watching, and its RSS and CPU read for -idle minutes;
// then, with -namespaces-glob M, M namespaces team-0… and `kubediff watch
// -n 'team-*'` timed to watching.

const kindsPerGroup = 10

// typesScale runs the scenario and prints its figures.
func (b *bench) typesScale() error {
	ext := apiextensionsclient.NewForConfigOrDie(withRate(b.env)).ApiextensionsV1().CustomResourceDefinitions()
	builtin, err := b.countTypes()
	if err != nil {
		return err
	}
	fmt.Printf("types served before any CRD: %d\n", builtin)
	if first := max(0, 300-builtin); first > 0 {
		if err := b.createCRDs(ext, builtin, 0, first); err != nil {
			return err
		}
		if err := b.timeResources(); err != nil {
			return err
		}
	}
	if err := b.createCRDs(ext, builtin, max(0, 300-builtin), b.o.types); err != nil {
		return err
	}
	if err := b.timeResources(); err != nil {
		return err
	}
	if err := b.watchIdle(builtin + b.o.types); err != nil {
		return err
	}
	return b.namespaceGlob()
}

// countTypes is how many types `kubediff resources` lists now.
func (b *bench) countTypes() (int, error) {
	out, err := exec.Command(b.o.binary, "resources", "--kubeconfig", b.env.Kubeconfig, "-o", "json").Output()
	if err != nil {
		return 0, fmt.Errorf("kubediff resources: %w", err)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(out, &rows); err != nil {
		return 0, fmt.Errorf("kubediff resources -o json: %w", err)
	}
	return len(rows), nil
}

// createCRDs creates CRDs number from to to-1 and waits until the API
// server serves them all, besides the builtin types.
func (b *bench) createCRDs(ext interface {
	Create(context.Context, *apiextensionsv1.CustomResourceDefinition, metav1.CreateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}, builtin, from, to int) error {
	if to <= from {
		return nil
	}
	step(fmt.Sprintf("creating CRDs %d to %d", from, to-1))
	start := time.Now()
	err := parallel(to-from, func(i int) error {
		_, err := ext.Create(b.ctx, scaleCRD(from+i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		if n, err := b.countTypes(); err == nil && n >= builtin+to {
			break
		}
	}
	fmt.Printf("created and served %d CRDs in %.0f s\n", to-from, time.Since(start).Seconds())
	return nil
}

func scaleCRD(i int) *apiextensionsv1.CustomResourceDefinition {
	group := fmt.Sprintf("g%d.scale.kubediff.io", i/kindsPerGroup)
	kind := fmt.Sprintf("Widget%d", i)
	plural := fmt.Sprintf("widget%ds", i)
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural, Singular: fmt.Sprintf("widget%d", i), ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}

// timeResources runs `kubediff resources` three times: the median wall
// time, and how many types it listed.
func (b *bench) timeResources() error {
	var took []float64
	for range 3 {
		start := time.Now()
		if out, err := exec.Command(b.o.binary, "resources", "--kubeconfig", b.env.Kubeconfig).CombinedOutput(); err != nil {
			return fmt.Errorf("kubediff resources: %w: %s", err, out)
		}
		took = append(took, time.Since(start).Seconds())
	}
	types, err := b.countTypes()
	if err != nil {
		return err
	}
	sort.Float64s(took)
	fmt.Printf("kubediff resources with %d types: %.2f s (median of 3; %.2f–%.2f)\n", types, took[1], took[0], took[2])
	return nil
}

// watchIdle starts kubediff on every type, times it to watching, then
// reads its RSS and CPU every minute for -idle minutes.
func (b *bench) watchIdle(types int) error {
	step(fmt.Sprintf("kubediff watching %d types, then idle for %d minutes", types, b.o.idleMinutes))
	// gctrace: the heap live after each collection tells a leak (it
	// grows) from garbage not yet collected or returned (RSS moves, it
	// does not).
	kd, err := startCmd("", exec.Command(b.o.binary, watchArgs(b.env.Kubeconfig)...), []string{"GODEBUG=gctrace=1"})
	if err != nil {
		return err
	}
	defer kd.stop()
	fmt.Printf("watching %d types (%d served): synced in %.1f s, RSS %.1f MB (private %.1f MB)\n", kd.types.Load(), types, kd.synced.Seconds(), mb(kd.rss()), mb(kd.anon()))
	pid := []int{kd.cmd.Process.Pid}
	for m := 1; m <= b.o.idleMinutes; m++ {
		before := cpuSeconds(pid)
		time.Sleep(time.Minute)
		fmt.Printf("  idle minute %2d: RSS %.1f MB (private %.1f MB), heap live after the last GC %d MB, CPU %.2f%% of a core\n",
			m, mb(kd.rss()), mb(kd.anon()), kd.liveHeapMB.Load(), (cpuSeconds(pid)-before)/60*100)
		// With KUBEDIFF_HEAPPROFILE set, a profile after the first
		// idle minute and one at the end show what grew, if anything.
		if m == 1 || m == b.o.idleMinutes {
			kd.heapProfile()
		}
	}
	return nil
}

// namespaceGlob creates -namespaces-glob namespaces and times kubediff
// watching them through one glob.
func (b *bench) namespaceGlob() error {
	n := b.o.globNamespaces
	if n == 0 {
		return nil
	}
	step(fmt.Sprintf("creating %d namespaces team-0…", n))
	err := parallel(n, func(i int) error {
		_, err := b.cs.CoreV1().Namespaces().Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%d", i)}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	kd, err := startKubediff(b.o.binary, b.env.Kubeconfig, "-n", "team-*")
	if err != nil {
		return err
	}
	defer kd.stop()
	fmt.Printf("-n 'team-*' over %d namespaces: watching in %.1f s, RSS %.1f MB\n", n, kd.synced.Seconds(), mb(kd.rss()))
	return nil
}
