package e2e

import (
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// renderedManifests are the in-cluster manifests as they are applied:
// kustomize's base and namespaced variant, the chart with its default and
// namespaced values.
func renderedManifests(t *testing.T) map[string]string {
	t.Helper()
	root := repoRoot(t)
	chart := filepath.Join(root, "charts", "kubediff")
	out := map[string]string{
		"deploy/base":       kubectl(t, "", "kustomize", filepath.Join(root, "deploy", "base")),
		"deploy/namespaced": kubectl(t, "", "kustomize", filepath.Join(root, "deploy", "namespaced")),
	}
	for name, extra := range map[string][]string{
		"chart":            nil,
		"chart namespaced": {"-f", filepath.Join(chart, "ci", "namespaced-values.yaml")},
	} {
		rendered, err := helm(t, append([]string{"template", "manifests-test", chart, "--namespace", "manifests-test"}, extra...)...)
		if err != nil {
			t.Fatalf("helm template %s: %v\n%s", name, err, rendered)
		}
		out[name] = rendered
	}
	return out
}

// podSpecs returns the Pod templates of the Deployments and StatefulSets
// in a multi-document manifest.
func podSpecs(t *testing.T, manifests string) []corev1.PodSpec {
	t.Helper()
	var specs []corev1.PodSpec
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var w struct {
			Kind string `json:"kind"`
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &w); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		if w.Kind == "Deployment" || w.Kind == "StatefulSet" {
			specs = append(specs, w.Spec.Template.Spec)
		}
	}
	if len(specs) == 0 {
		t.Fatalf("no Deployment or StatefulSet in:\n%s", manifests)
	}
	return specs
}

// kubediff's default HTTP address is loopback, which the kubelet's probes
// and Prometheus cannot reach: every in-cluster manifest serves health and
// metrics on the Pod's IP, on the port its probes name.
func TestManifestsServeHealthOnThePodIP(t *testing.T) {
	for name, manifests := range renderedManifests(t) {
		for _, spec := range podSpecs(t, manifests) {
			c := spec.Containers[0]
			i := slices.Index(c.Args, "--http-address")
			if i < 0 || i+1 >= len(c.Args) {
				t.Errorf("%s: kubediff's args %v set no --http-address: it would listen on loopback and fail its probes", name, c.Args)
				continue
			}
			host, port, err := net.SplitHostPort(c.Args[i+1])
			if err != nil || (host != "" && host != "0.0.0.0" && host != "::") {
				t.Errorf("%s: --http-address %q does not listen on the Pod's IP", name, c.Args[i+1])
				continue
			}
			http := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" })
			if http < 0 || port != strconv.Itoa(int(c.Ports[http].ContainerPort)) {
				t.Errorf("%s: --http-address %q is not the container's http port %v", name, c.Args[i+1], c.Ports)
			}
			for probe, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != "http" {
					t.Errorf("%s: the %s probe does not ask the http port: %+v", name, probe, p)
				}
			}
		}
	}
}
