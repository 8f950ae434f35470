package diff

import (
	"encoding/base64"
	"strings"

	"github.com/kubediff/kubediff/pkg/glob"
)

// A Secret's values travel beyond data and stringData: tools copy the
// object into its annotations (kubectl, kapp, Rancher's wrangler, gzipped
// and base64'd), and people put a value into a label or annotation of
// their own. No search can follow every encoding a tool may choose, so
// on a Secret an annotation's value shows only when its key is known to
// be safe (safeSecretAnnotations, and the user's own list); labels, which
// hold no copies (63 characters at most), are redacted when they hold a
// value.

// minContained is the shortest Secret value searched for inside a longer
// annotation: shorter ones ("1", "true") would hide unrelated text, and
// are still redacted where a value equals them.
const minContained = 4

// secretValues returns a Secret's values in every form they can be
// copied in: stringData's as written and base64-encoded, data's encoded
// and decoded.
func secretValues(obj any) []string {
	var values []string
	add := func(v string) {
		if v != "" && !isRedacted(v) {
			values = append(values, v)
		}
	}
	data, _ := nestedMap(obj, "data")
	for _, v := range data {
		if s, ok := v.(string); ok {
			add(s)
			if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
				add(string(dec))
			}
		}
	}
	plain, _ := nestedMap(obj, "stringData")
	for _, v := range plain {
		if s, ok := v.(string); ok {
			add(s)
			add(base64.StdEncoding.EncodeToString([]byte(s)))
		}
	}
	return values
}

// redactSecretMetadata redacts each annotation value of a Secret whose
// key is not known to be safe, and each label or annotation value that
// holds one of its values or is a copy of an object (JSON, or YAML with
// data): such a copy may hold values the Secret no longer has.
func (o objectRedaction) redactSecretMetadata(obj any, values []string) any {
	out, _ := rewriteChildren(obj, func(key string, meta any) (any, action) {
		if key != "metadata" {
			return meta, keep
		}
		return changedTo(rewriteChildren(meta, func(key string, m any) (any, action) {
			if key != "labels" && key != "annotations" {
				return m, keep
			}
			return changedTo(rewriteChildren(m, func(name string, v any) (any, action) {
				s, isString := v.(string)
				copied := isString && (holdsAny(s, values) || looksLikeObjectCopy(s))
				if copied || (key == "annotations" && !o.r.safeSecretAnnotation(name)) {
					return o.replace(key+"/"+name, v)
				}
				return v, keep
			}))
		}))
	})
	return out
}

func holdsAny(s string, values []string) bool {
	for _, v := range values {
		if s == v || (len(v) >= minContained && strings.Contains(s, v)) {
			return true
		}
	}
	return false
}

// looksLikeObjectCopy recognises a serialized object in an annotation: a
// JSON object, or YAML naming data or stringData.
func looksLikeObjectCopy(s string) bool {
	t := strings.TrimSpace(s)
	return strings.HasPrefix(t, "{") || strings.Contains(t, "data:") || strings.Contains(t, "Data:")
}

// safeSecretAnnotations are the annotation keys whose values a Secret
// shows: names, uids and a certificate's public details, written by
// Kubernetes, Helm, cert-manager, Argo CD, Sealed Secrets and wrangler,
// none of which holds a value of the Secret. Each is exact: a tool's
// prefix alone says nothing of what it keeps under it.
var safeSecretAnnotations = []string{
	"kubernetes.io/service-account.name",
	"kubernetes.io/service-account.uid",
	"kubectl.kubernetes.io/restartedAt",
	"meta.helm.sh/release-name",
	"meta.helm.sh/release-namespace",
	"helm.sh/hook",
	"helm.sh/hook-weight",
	"helm.sh/hook-delete-policy",
	"helm.sh/resource-policy",
	"cert-manager.io/certificate-name",
	"cert-manager.io/issuer-name",
	"cert-manager.io/issuer-kind",
	"cert-manager.io/issuer-group",
	"cert-manager.io/common-name",
	"cert-manager.io/alt-names",
	"cert-manager.io/ip-sans",
	"cert-manager.io/uri-sans",
	"cert-manager.io/email-sans",
	"cert-manager.io/subject-organizations",
	"cert-manager.io/subject-organizationalunits",
	"cert-manager.io/subject-countries",
	"cert-manager.io/subject-provinces",
	"cert-manager.io/subject-localities",
	"cert-manager.io/subject-streetaddresses",
	"cert-manager.io/subject-postalcodes",
	"cert-manager.io/subject-serialnumber",
	"cert-manager.io/allow-direct-injection",
	"argocd.argoproj.io/tracking-id",
	"argocd.argoproj.io/sync-wave",
	"argocd.argoproj.io/sync-options",
	"argocd.argoproj.io/compare-options",
	"argocd.argoproj.io/hook",
	"argocd.argoproj.io/hook-delete-policy",
	"sealedsecrets.bitnami.com/managed",
	"sealedsecrets.bitnami.com/cluster-wide",
	"sealedsecrets.bitnami.com/namespace-wide",
	"objectset.rio.cattle.io/id",
	"objectset.rio.cattle.io/owner-gvk",
	"objectset.rio.cattle.io/owner-name",
	"objectset.rio.cattle.io/owner-namespace",
}

// safeSecretAnnotation says whether a Secret's annotation shows its value:
// a key of the built-in list, or one matching the user's patterns.
func (r *redactor) safeSecretAnnotation(key string) bool {
	return r.safeAnnotations[key] || glob.MatchAny(r.userSafeAnnotations, key)
}
