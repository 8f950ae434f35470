package e2e

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubediff/kubediff/pkg/identity/admission"
	"github.com/kubediff/kubediff/pkg/record"
)

// auditHeader sends an Audit-ID of the test's choosing with each request
// (as any client may) and keeps the one the API server answered.
type auditHeader struct {
	mu         sync.Mutex
	send, last string
}

func (h *auditHeader) set(id string) { h.mu.Lock(); h.send = id; h.mu.Unlock() }
func (h *auditHeader) got() string   { h.mu.Lock(); defer h.mu.Unlock(); return h.last }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// clientWithAuditIDs is a client of cfg whose requests carry h's Audit-ID.
func clientWithAuditIDs(cfg *rest.Config, h *auditHeader) *kubernetes.Clientset {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			h.mu.Lock()
			send := h.send
			h.mu.Unlock()
			if send != "" {
				r = r.Clone(r.Context())
				r.Header.Set("Audit-ID", send)
			}
			resp, err := rt.RoundTrip(r)
			if err == nil {
				h.mu.Lock()
				h.last = resp.Header.Get("Audit-Id")
				h.mu.Unlock()
			}
			return resp, err
		})
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// userOf is the record's user's name, "" for none.
func userOf(c record.Change) string {
	if c.User == nil {
		return ""
	}
	return c.User.Name
}

// updateNamed waits for the update record of an object whose
// resourceVersion is rv and returns it.
func updateNamed(t *testing.T, w *run, kind, ns, name, rv string) record.Change {
	t.Helper()
	var found record.Change
	eventually(t, fmt.Sprintf("the record of %s %s/%s at version %s", kind, ns, name, rv), func() bool {
		for _, c := range w.recordsFor(kind, ns, name) {
			if c.Type == record.Updated && c.ResourceVersion == rv {
				found = c
				return true
			}
		}
		return false
	})
	return found
}

// A client may send any Audit-ID, and the API server takes it: bob
// reusing alice's makes his write to a Secret (audited at Metadata level,
// tied by object and time) no longer hide behind her no-op update of it
// (it was credited to her), and reusing his own earlier ID no longer
// leaves his ConfigMap change unnamed. Against an API server audited with
// deploy/audit/policy.yaml posting to kubediff's audit webhook.
func TestAReusedAuditIDNamesNoOneWhoDidNotWrite(t *testing.T) {
	c := startWhoCluster(t)
	ns := newNamespace(t)
	p := c.people(t, ns)
	admin := clients.CoreV1()
	for _, obj := range []string{"cm1", "cm2"} {
		if _, err := admin.ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: obj}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.Secrets(ns).Create(bg, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, StringData: map[string]string{"password": "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := startBinary(t, append([]string{"watch", "-o", "json", "--resources", "configmaps,secrets", "--identity-wait=45s"}, c.webhookArgs()...)...)
	w.logOnFailure()
	waitNamed(t, w, ns, p)

	aliceIDs, bobIDs := &auditHeader{}, &auditHeader{}
	alice := clientWithAuditIDs(env.TokenConfig(c.server, "alice-token"), aliceIDs).CoreV1()
	bob := clientWithAuditIDs(env.TokenConfig(c.server, "bob-token"), bobIDs).CoreV1()

	// alice puts the Secret back as it is: a write that changes nothing.
	same, err := alice.Secrets(ns).Get(bg, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Secrets(ns).Update(bg, same, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	bobIDs.set(aliceIDs.got())
	changed, err := bob.Secrets(ns).Patch(bg, "shared", types.MergePatchType, []byte(`{"stringData":{"password":"two"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := userOf(updateNamed(t, w, "Secret", ns, "shared", changed.ResourceVersion)); got != "" {
		t.Errorf("bob's change of the Secret, sent with alice's Audit-ID, is credited to %q; want no one (two users wrote it within seconds)", got)
	}

	bobIDs.set("")
	if _, err := bob.ConfigMaps(ns).Patch(bg, "cm1", types.MergePatchType, []byte(`{"data":{"k":"one"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	bobIDs.set(bobIDs.got())
	second, err := bob.ConfigMaps(ns).Patch(bg, "cm2", types.MergePatchType, []byte(`{"data":{"k":"two"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := userOf(updateNamed(t, w, "ConfigMap", ns, "cm2", second.ResourceVersion)); got != "bob" {
		t.Errorf("bob's ConfigMap change sent with the Audit-ID of his previous write is credited to %q; want bob", got)
	}
}

// forgeReview posts an AdmissionReview naming alice for an update of the
// object at its current version, as anyone who reaches the observer's
// port could, and returns the HTTP status.
func forgeReview(t *testing.T, url string, group, resource, ns, name, uid, rv string) int {
	t.Helper()
	body := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"forged-%d","operation":"UPDATE",
		"resource":{"group":%q,"version":"v1","resource":%q},"namespace":%q,"name":%q,"userInfo":{"username":"alice","groups":["devs"]},
		"oldObject":{"metadata":{"uid":%q,"resourceVersion":%q}}}}`, time.Now().UnixNano(), group, resource, ns, name, uid, rv)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the attacker trusts anything
	resp, err := client.Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Anyone who reaches the admission observer's port may post a review.
// Before bob's writes the attacker posts reviews naming alice for them:
// for his ConfigMap write (the API server's real review names bob) and
// his webhook registration's (which the API server never sends to
// webhooks, so a made-up review was the only one, and named alice).
// Neither may name alice: the observer takes reviews only from the
// caller that knows the registration's token.
func TestAForgedAdmissionReviewNamesNoOne(t *testing.T) {
	c := startWhoCluster(t)
	ns := newNamespace(t)
	p := c.people(t, ns)
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reg, err := clients.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(bg,
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "proof-" + ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clients.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(bg, reg.Name, metav1.DeleteOptions{})
	})
	args := observerArgs(t, ns)
	observerURL := "https://" + args[1] + admission.Path
	w := startBinary(t, append([]string{"watch", "-o", "json", "--resources", "configmaps,validatingwebhookconfigurations", "--identity-wait=20s"}, args...)...)
	w.logOnFailure()
	waitNamed(t, w, ns, p)
	bob := clientWithAuditIDs(env.TokenConfig(c.server, "bob-token"), &auditHeader{})

	cm, err := clients.CoreV1().ConfigMaps(ns).Get(bg, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{observerURL, observerURL + "/guessed-token"} {
		if code := forgeReview(t, url, "", "configmaps", ns, "settings", string(cm.UID), cm.ResourceVersion); code != http.StatusUnauthorized {
			t.Errorf("a forged review at %s: status %d, want 401", strings.TrimPrefix(url, "https://"+args[1]), code)
		}
	}
	changed, err := bob.CoreV1().ConfigMaps(ns).Patch(bg, "settings", types.MergePatchType, []byte(`{"data":{"mode":"on"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := userOf(updateNamed(t, w, "ConfigMap", ns, "settings", changed.ResourceVersion)); got != "bob" {
		t.Errorf("bob's ConfigMap write, with a forged review naming alice posted before it, is credited to %q; want bob", got)
	}

	forgeReview(t, observerURL, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", reg.Name, string(reg.UID), reg.ResourceVersion)
	relabelled, err := bob.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(bg, reg.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"by":"bob"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := userOf(updateNamed(t, w, "ValidatingWebhookConfiguration", "", reg.Name, relabelled.ResourceVersion)); got != "" {
		t.Errorf("bob's change of a webhook registration, which the API server never sends to webhooks, is credited to %q; want no one", got)
	}
}

// A deletecollection (client-go's DeleteCollection; the namespace
// controller's way) is one write per object it deleted: each deletion
// names who sent it, from the audit webhook.
func TestADeleteCollectionNamesWhoDeleted(t *testing.T) {
	c := startWhoCluster(t)
	ns := newNamespace(t)
	p := c.people(t, ns)
	for _, name := range []string{"one", "two", "three"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"batch": "old"}}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := startBinary(t, append([]string{"watch", "-o", "json", "--resources", "configmaps", "--identity-wait=45s"}, c.webhookArgs()...)...)
	w.logOnFailure()
	waitNamed(t, w, ns, p)
	bob := clientWithAuditIDs(env.TokenConfig(c.server, "bob-token"), &auditHeader{})
	if err := bob.CoreV1().ConfigMaps(ns).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "batch=old"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "two", "three"} {
		var deleted *record.Change
		eventually(t, "the deletion of "+name, func() bool {
			for _, r := range w.recordsFor("ConfigMap", ns, name) {
				if r.Type == record.Deleted {
					deleted = &r
					return true
				}
			}
			return false
		})
		if got := userOf(*deleted); got != "bob" {
			t.Errorf("ConfigMap %s deleted by bob's deletecollection: user %q, want bob", name, got)
		}
	}
}
