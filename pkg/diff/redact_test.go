package diff

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
)

var configmaps = change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

const canary = "canary-Zq8vT3"

// TestSecretValuesNeverLeakThroughCopies: a Secret's value reaches no
// record, whichever copy of it changes: kapp's and kubectl's copies of
// the object, an annotation or label equal to a value or holding its
// base64 form, a Helm release kept in a ConfigMap.
func TestSecretValuesNeverLeakThroughCopies(t *testing.T) {
	enc := base64.StdEncoding.EncodeToString([]byte(canary))
	secret := func(meta map[string]any) *unstructured.Unstructured {
		meta["name"], meta["namespace"], meta["resourceVersion"] = "db", "prod", "1"
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": meta,
			"data": map[string]any{"password": enc}}}
	}
	kappCopy := `{"apiVersion":"v1","kind":"Secret","data":{"password":"` + enc + `"},"metadata":{"name":"db"}}`
	oldKappCopy := `{"apiVersion":"v1","kind":"Secret","stringData":{"password":"abc"}}` // a value the Secret no longer has
	cases := []struct {
		name     string
		old, new map[string]any
	}{
		{"kapp's copy", map[string]any{}, map[string]any{"annotations": map[string]any{"kapp.k14s.io/original": kappCopy}}},
		{"kapp's copy with an old value", map[string]any{}, map[string]any{"annotations": map[string]any{"example.com/copy": oldKappCopy}}},
		{"kubectl's copy", map[string]any{}, map[string]any{"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": kappCopy}}},
		{"an annotation equal to the value", map[string]any{}, map[string]any{"annotations": map[string]any{"note": canary}}},
		{"an annotation holding the encoded value", map[string]any{}, map[string]any{"annotations": map[string]any{"note": "was " + enc + " before"}}},
		{"a label equal to the value", map[string]any{}, map[string]any{"labels": map[string]any{"pw": canary}}},
	}
	d, err := New(Options{Rules: Rules{}, Redact: RedactOptions{Salt: []byte("s")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := d.Diff(change.Event{Type: change.Updated, Resource: secrets, Old: secret(tc.old), New: secret(tc.new)})
			if !ok {
				t.Fatal("no record: the copy's appearance must still show as a change")
			}
			out, _ := json.Marshal(c)
			for _, leak := range []string{canary, enc, "abc"} {
				if strings.Contains(string(out), leak) {
					t.Errorf("record holds %q: %s", leak, out)
				}
			}
		})
	}
}

func TestHelmReleaseInConfigMapIsRedacted(t *testing.T) {
	d, err := New(Options{Redact: RedactOptions{Salt: []byte("s")}})
	if err != nil {
		t.Fatal(err)
	}
	release := func(v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "sh.helm.release.v1.web.v2", "namespace": "prod", "labels": map[string]any{"owner": "helm"}},
			"data":     map[string]any{"release": v}}}
	}
	c, ok := d.Diff(change.Event{Type: change.Updated, Resource: configmaps, Old: release("H4sIold" + canary), New: release("H4sInew" + canary)})
	if !ok {
		t.Fatal("no record")
	}
	if out, _ := json.Marshal(c); strings.Contains(string(out), canary) {
		t.Errorf("Helm release in the clear: %s", out)
	}
}

// TestRedactedHashSaysOnlyChangedOrNot: with the same salt (kept in the
// state dir), the same value in the same field hashes the same in another
// process; the same value in another object or field does not.
func TestRedactedHashSaysOnlyChangedOrNot(t *testing.T) {
	newRed := func() *redactor {
		r, err := newRedactor(RedactOptions{Keys: []string{"*password*"}, Salt: []byte("kept")})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cm := func(name, key string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name, "namespace": "prod"}, "data": map[string]any{key: canary}}
	}
	value := func(r *redactor, obj map[string]any, res change.Resource, key string) string {
		return r.redact(obj, res)["data"].(map[string]any)[key].(string)
	}
	first := value(newRed(), cm("a", "db_password"), configmaps, "db_password")
	if again := value(newRed(), cm("a", "db_password"), configmaps, "db_password"); again != first {
		t.Errorf("the same value hashed %s, then %s in a new process with the same salt", first, again)
	}
	r := newRed()
	if other := value(r, cm("b", "db_password"), configmaps, "db_password"); other == first {
		t.Error("equal values in two objects hash the same: the hash is an equality oracle")
	}
	if other := value(r, cm("a", "admin_password"), configmaps, "admin_password"); other == first {
		t.Error("equal values in two fields hash the same")
	}
	sec := map[string]any{"metadata": map[string]any{"name": "a", "namespace": "prod"}, "data": map[string]any{"db_password": canary}}
	if other := value(r, sec, secrets, "db_password"); other == first {
		t.Error("a Secret's value hashes as a ConfigMap's equal value does")
	}
}

// TestRulesFingerprintFollowsWhatTheCacheHolds: a key added to the
// redaction changes the fingerprint (restored objects must go through the
// rules again); the salt and the clock do not.
func TestRulesFingerprintFollowsWhatTheCacheHolds(t *testing.T) {
	fp := func(o Options) string {
		d, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		return d.RulesFingerprint()
	}
	base := Options{Rules: Rules{Defaults: AllDefaults}, Redact: RedactOptions{Keys: []string{"*password*"}, Salt: []byte("a")}}
	salted := base
	salted.Redact.Salt = []byte("b")
	more := base
	more.Redact.Keys = []string{"*password*", "*pin*"}
	fewer := base
	fewer.Rules.Defaults = []string{"bookkeeping"}
	if fp(base) != fp(salted) {
		t.Error("the salt changed the fingerprint: every restart would redo the state")
	}
	if fp(base) == fp(more) || fp(base) == fp(fewer) {
		t.Error("another redaction or other rules kept the fingerprint: stored objects would keep what is now hidden")
	}
}
