package diff

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/internal/toolcopy"
	"github.com/kubediff/kubediff/pkg/change"
)

// jsonText is s as it reads inside a JSON string.
func jsonText(s string) string {
	j, _ := json.Marshal(s)
	return string(j[1 : len(j)-1])
}

// TestSecretAnnotationsShowOnlyWhenKnownSafe: on a Secret, an annotation
// whose key is not known to be safe is redacted whatever its encoding —
// wrangler's gzipped and base64'd copy of the object, a made-up tool's
// base64, JSON or hex copy — in the record and in the cached
// object; the change still shows as a change. Known-safe ones
// (kubernetes.io/service-account.name, cert-manager's names) show.
func TestSecretAnnotationsShowOnlyWhenKnownSafe(t *testing.T) {
	enc := base64.StdEncoding.EncodeToString([]byte(canary))
	copyOf := func(value string) string {
		return `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":{"password":"` + value + `"}}`
	}
	later := base64.StdEncoding.EncodeToString([]byte("canary-later-Kp2"))
	// A JSON list of copies, values in unpadded base64url.
	jsonList := func(v string) string {
		return `[{"kind":"Secret","data":{"password":"` + base64.RawURLEncoding.EncodeToString([]byte(v)) + `"}}]`
	}
	cases := []struct{ key, old, new string }{
		{"objectset.rio.cattle.io/applied", toolcopy.GzipBase64(copyOf(enc)), toolcopy.GzipBase64(copyOf(later))},
		{"example.dev/snapshot", toolcopy.GzipBase64(copyOf(enc)), toolcopy.GzipBase64(copyOf(later))},
		{"example.dev/b64", base64.StdEncoding.EncodeToString([]byte(copyOf(enc))), base64.StdEncoding.EncodeToString([]byte(copyOf(later)))},
		{"example.dev/hex", hex.EncodeToString([]byte(canary)), hex.EncodeToString([]byte("canary-later-Kp2"))},
		{"example.dev/json", jsonList(canary), jsonList("canary-later-Kp2")},
	}
	secret := func(value, sa, key, annotation string) *unstructured.Unstructured {
		meta := map[string]any{"name": "db", "namespace": "prod", "resourceVersion": "1",
			"annotations": map[string]any{"kubernetes.io/service-account.name": sa, "cert-manager.io/issuer-name": "letsencrypt"}}
		if annotation != "" {
			meta["annotations"].(map[string]any)[key] = annotation
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
			"metadata": meta, "data": map[string]any{"password": value}}}
	}
	d, err := New(Options{Redact: RedactOptions{Salt: []byte("s")}})
	if err != nil {
		t.Fatal(err)
	}
	transform := d.CacheTransform(secrets)
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			leaks := []string{canary, enc, later, tc.old, tc.new}
			for _, step := range []struct{ name, oldAnn, newAnn, oldValue, newValue string }{
				{"appears", "", tc.old, enc, enc},
				{"changes", tc.old, tc.new, enc, later},
			} {
				old, updated := secret(step.oldValue, "builder", tc.key, step.oldAnn), secret(step.newValue, "deployer", tc.key, step.newAnn)
				c, ok := d.Diff(change.Event{Type: change.Updated, Resource: secrets, Old: old, New: updated})
				if !ok {
					t.Fatalf("%s: no record: the annotation's change must still show", step.name)
				}
				record, _ := json.Marshal(c)
				cached, err := transform(updated.DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				stored, _ := json.Marshal(cached)
				for place, out := range map[string]string{"record": string(record), "cached object": string(stored)} {
					for _, leak := range leaks {
						if leak != "" && strings.Contains(out, jsonText(leak)) {
							t.Errorf("%s: the %s holds %.40q…: %s", step.name, place, leak, out)
						}
					}
					if !strings.Contains(out, tc.key) {
						t.Errorf("%s: the %s lost the annotation's key %s: %s", step.name, place, tc.key, out)
					}
					for _, shown := range []string{"deployer", "letsencrypt", `"name":"db"`, "kubernetes.io/tls"} {
						if place == "cached object" && !strings.Contains(out, shown) {
							t.Errorf("%s: the cached object hides %s, which is safe: %s", step.name, shown, out)
						}
					}
				}
				if !strings.Contains(string(record), `"deployer"`) || !strings.Contains(string(record), `"builder"`) {
					t.Errorf("%s: the service account's name change is hidden: %s", step.name, record)
				}
			}
		})
	}
}

// TestSafeSecretAnnotationsAreConfigurable: a key the user names in
// RedactOptions.SafeSecretAnnotations shows; the list changes the rules'
// fingerprint, so Secrets stored under the old list are transformed again.
func TestSafeSecretAnnotationsAreConfigurable(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "namespace": "prod", "annotations": map[string]any{
			"team.example.com/owner": "payments", "objectset.rio.cattle.io/applied": "H4sI" + canary}}}}
	var applied string
	show := func(opts RedactOptions) (string, string) {
		opts.Salt = []byte("s")
		d, err := New(Options{Redact: opts})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := d.CacheTransform(secrets)(secret.DeepCopy())
		annotations := out.(*unstructured.Unstructured).GetAnnotations()
		applied = annotations["objectset.rio.cattle.io/applied"]
		return annotations["team.example.com/owner"], d.RulesFingerprint()
	}
	hidden, before := show(RedactOptions{})
	if !isRedacted(hidden) {
		t.Errorf("an annotation of no known tool shows %q on a Secret", hidden)
	}
	shown, after := show(RedactOptions{SafeSecretAnnotations: []string{"team.example.com/*", "objectset.rio.cattle.io/*"}})
	if shown != "payments" {
		t.Errorf("an annotation named safe in the config shows %q, want payments", shown)
	}
	if !isRedacted(applied) {
		t.Errorf("a tool's copy of the object shows %q when its prefix is named safe", applied)
	}
	if before == after {
		t.Error("the safe annotations kept the fingerprint: stored Secrets would keep the old rule")
	}
	if _, err := New(Options{Redact: RedactOptions{SafeSecretAnnotations: []string{"[bad"}}}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
}
