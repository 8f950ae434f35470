package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// manifestsOf returns the documents of a multi-document manifest whose
// kind is kind, decoded into T.
func manifestsOf[T any](t *testing.T, manifests, kind string) []T {
	t.Helper()
	var out []T
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		if meta.Kind != kind {
			continue
		}
		var v T
		if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
			t.Fatalf("%s: %v in:\n%s", kind, err, doc)
		}
		out = append(out, v)
	}
	return out
}

// shippedWebhook is the registration deploy/components/admission-observer
// ships, which the admission observer's e2e test registers.
func shippedWebhook(t *testing.T) admissionregistrationv1.ValidatingWebhook {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "components", "admission-observer", "webhook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	regs := manifestsOf[admissionregistrationv1.ValidatingWebhookConfiguration](t, string(data), "ValidatingWebhookConfiguration")
	if len(regs) != 1 || len(regs[0].Webhooks) != 1 {
		t.Fatalf("want one registration with one webhook in webhook.yaml, got %+v", regs)
	}
	return regs[0].Webhooks[0]
}

// sameRules reports whether two webhook entries match the same requests
// with the same policies, whatever their names and addresses.
func sameRules(a, b admissionregistrationv1.ValidatingWebhook) bool {
	a.Name, b.Name = "", ""
	a.ClientConfig, b.ClientConfig = admissionregistrationv1.WebhookClientConfig{}, admissionregistrationv1.WebhookClientConfig{}
	return reflect.DeepEqual(a, b)
}

// TestHelmChartAdmissionObserver: admissionObserver.enabled renders what
// the API server accepts (server-side dry run): a StatefulSet serving the
// observer with the chart's certificate, one Service and one webhook
// entry per replica, each with the rules of the registration the e2e
// test proves (deploy/components/admission-observer), a path ending in a
// random token the chart keeps in a Secret kubediff reads (only the API
// server may post reviews), and a config file kubediff accepts. An existing Secret needs its CA. Off by default.
func TestHelmChartAdmissionObserver(t *testing.T) {
	const release = "observer-test"
	ensureNamespace(t, release)
	chart := filepath.Join(repoRoot(t), "charts", "kubediff")
	render := func(extra ...string) (string, error) {
		return helm(t, append([]string{"template", release, chart, "--namespace", release}, extra...)...)
	}
	if out, err := helm(t, "lint", chart, "--strict", "--set", "admissionObserver.enabled=true"); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	defaults, err := render()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(defaults, "ValidatingWebhookConfiguration") || strings.Contains(defaults, "admissionObserver") || !strings.Contains(defaults, "kind: Deployment") {
		t.Errorf("the observer should be off by default")
	}
	on, err := render("--set", "admissionObserver.enabled=true", "--set", "replicaCount=3")
	if err != nil {
		t.Fatalf("%v\n%s", err, on)
	}
	if out := kubectl(t, on, "apply", "--dry-run=server", "-f", "-"); !strings.Contains(out, "(server dry run)") {
		t.Fatalf("dry run:\n%s", out)
	}
	shipped := shippedWebhook(t)
	regs := manifestsOf[admissionregistrationv1.ValidatingWebhookConfiguration](t, on, "ValidatingWebhookConfiguration")
	if len(regs) != 1 || len(regs[0].Webhooks) != 3 {
		t.Fatalf("want one registration with a webhook per replica (3), got %d", len(regs))
	}
	var services []string
	for _, s := range manifestsOf[corev1.Service](t, on, "Service") {
		if pod := s.Spec.Selector["statefulset.kubernetes.io/pod-name"]; pod != "" {
			services = append(services, s.Name+"→"+pod)
		}
	}
	if want := []string{"observer-test-kubediff-observer-0→observer-test-kubediff-0", "observer-test-kubediff-observer-1→observer-test-kubediff-1", "observer-test-kubediff-observer-2→observer-test-kubediff-2"}; !slices.Equal(services, want) {
		t.Errorf("per-replica Services %v, want %v", services, want)
	}
	token := chartObserverToken(t, on)
	for i, w := range regs[0].Webhooks {
		svc := w.ClientConfig.Service
		if svc == nil || svc.Name != strings.Split(services[i], "→")[0] || *svc.Path != "/observe/"+token || len(w.ClientConfig.CABundle) == 0 {
			t.Errorf("webhook %d calls %+v, want the path /observe/ and the token Secret's token", i, w.ClientConfig)
		}
		if !sameRules(w, shipped) {
			t.Errorf("the chart's webhook %d differs from deploy/components/admission-observer/webhook.yaml:\n%+v\n%+v", i, w, shipped)
		}
	}
	sets := manifestsOf[appsv1.StatefulSet](t, on, "StatefulSet")
	if len(sets) != 1 || !strings.Contains(on, "secretName: observer-test-kubediff-admission-observer-tls") {
		t.Fatalf("want a StatefulSet mounting the observer's certificate")
	}
	config := renderedConfigFile(t, on)
	if data, _ := os.ReadFile(config); !strings.Contains(string(data), "address: :9443") || !strings.Contains(string(data), "tokenFile: /etc/kubediff/admission-observer-token/token") {
		t.Errorf("the config file does not serve the observer:\n%s", data)
	}
	var stdout, stderr syncBuffer
	if code := runCLI(&stdout, &stderr, "resources", "--kubeconfig", env.Kubeconfig, "--config", config); code != 0 {
		t.Errorf("kubediff refuses the chart's config file (exit %d): %s", code, stderr.String())
	}

	if out, err := render("--set", "admissionObserver.enabled=true", "--set", "admissionObserver.tls.existingSecret=mine"); err == nil || !strings.Contains(out, "admissionObserver.tls.caBundle") {
		t.Errorf("an existing Secret without its CA: err %v, output %q; want a failure naming admissionObserver.tls.caBundle", err, out)
	}
	mine, err := render("--set", "admissionObserver.enabled=true", "--set", "admissionObserver.tls.existingSecret=mine", "--set", "admissionObserver.tls.caBundle=Q0E=")
	if err != nil || strings.Contains(mine, "type: kubernetes.io/tls") || !strings.Contains(mine, "secretName: mine") || !strings.Contains(mine, "caBundle: Q0E=") {
		t.Errorf("an existing Secret: err %v; want it mounted, its CA trusted, no Secret made:\n%s", err, mine)
	}
}

// The kustomize component, added to the base as an overlay does, gives
// one replica serving the observer with cert-manager's certificate, and
// a registration the API server accepts (server-side dry run; cert-manager's
// own objects are not installed here, so they are only checked for the
// names the rest refers to).
func TestKustomizeAdmissionObserver(t *testing.T) {
	ensureNamespace(t, "kubediff")
	overlay := t.TempDir()
	deploy, err := filepath.Rel(overlay, filepath.Join(repoRoot(t), "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "resources: [" + deploy + "/base, observer-token.yaml]\ncomponents: [" + deploy + "/components/admission-observer]\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "observer-token.yaml"), []byte(kustomizeTokenSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	rendered := kubectl(t, "", "kustomize", overlay)
	var ours []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		if !strings.Contains(doc, "apiVersion: cert-manager.io/") {
			ours = append(ours, doc)
		}
	}
	if out := kubectl(t, strings.Join(ours, "\n---\n"), "apply", "--dry-run=server", "-f", "-"); !strings.Contains(out, "(server dry run)") {
		t.Fatalf("dry run:\n%s", out)
	}
	deployments := manifestsOf[appsv1.Deployment](t, rendered, "Deployment")
	if len(deployments) != 1 || *deployments[0].Spec.Replicas != 1 {
		t.Fatalf("want one Deployment of one replica (each must see every write)")
	}
	args := strings.Join(deployments[0].Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--admission-observer-address :9443 --admission-observer-cert-file /etc/kubediff/admission-observer/tls.crt --admission-observer-key-file /etc/kubediff/admission-observer/tls.key --admission-observer-token-file /etc/kubediff/admission-observer-token/token") {
		t.Errorf("args: %s", args)
	}
	kustomizeTokenReachesThePath(t, overlay, rendered)
	for _, want := range []string{"kind: Certificate", "secretName: kubediff-admission-observer-tls", "cert-manager.io/inject-ca-from: kubediff/kubediff-admission-observer", "name: kubediff-admission-observer\n  namespace: kubediff"} {
		if !strings.Contains(rendered, want) {
			t.Errorf("the component renders no %q", want)
		}
	}
}

// chartObserverToken is the token of the chart's observer token Secret
// in the rendered manifests: long, random, and the same in every render
// of one install.
func chartObserverToken(t *testing.T, rendered string) string {
	t.Helper()
	for _, s := range manifestsOf[corev1.Secret](t, rendered, "Secret") {
		if strings.HasSuffix(s.Name, "-admission-observer-token") {
			token := string(s.Data["token"])
			if len(token) < 32 {
				t.Fatalf("the observer's token is %d characters; want a random one of 32 or more", len(token))
			}
			return token
		}
	}
	t.Fatal("the chart makes no observer token Secret")
	return ""
}

// kustomizeTokenReachesThePath checks that the component needs the
// overlay's token Secret and puts its token at the end of the path.
func kustomizeTokenReachesThePath(t *testing.T, overlay string, rendered string) {
	t.Helper()
	regs := manifestsOf[admissionregistrationv1.ValidatingWebhookConfiguration](t, rendered, "ValidatingWebhookConfiguration")
	if len(regs) != 1 || *regs[0].Webhooks[0].ClientConfig.Service.Path != "/observe/"+kustomizeToken {
		t.Fatalf("the registration's path is not /observe/ and the overlay's token: %+v", regs)
	}
	if err := os.Remove(filepath.Join(overlay, "observer-token.yaml")); err != nil {
		t.Fatal(err)
	}
	kustomization, err := os.ReadFile(filepath.Join(overlay, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	without := strings.Replace(string(kustomization), ", observer-token.yaml", "", 1)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(without), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(env.Kubectl, "kustomize", overlay).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "kubediff-admission-observer-token") {
		t.Errorf("the component without the overlay's token Secret: err %v, output %.300s; want a failure naming the Secret", err, out)
	}
}

// kustomizeToken is the token the kustomize test's overlay gives.
const kustomizeToken = "zx81kq2m0atql7vw3nr5yb9cd4ef6gh1"

// kustomizeTokenSecret is the Secret an overlay gives the component.
const kustomizeTokenSecret = `apiVersion: v1
kind: Secret
metadata:
  name: kubediff-admission-observer-token
  namespace: kubediff
stringData:
  token: ` + kustomizeToken + "\n"
