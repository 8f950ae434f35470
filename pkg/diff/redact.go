package diff

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/glob"
)

// RedactOptions add redaction on top of Secrets' values, which are always
// redacted.
type RedactOptions struct {
	// Paths are JSON Pointers redacted in every type ("*" matches any key).
	Paths []string
	// Keys are case-insensitive glob patterns (*password*) of ConfigMap
	// data keys and container env var names whose values are redacted.
	Keys []string
	// SafeSecretAnnotations are glob patterns (cert-manager.io/*) of
	// annotation keys whose values a Secret shows, beyond the built-in
	// safeSecretAnnotations; its other annotations are redacted.
	SafeSecretAnnotations []string
	// Salt keys the hashes shown in place of values. Keep it with the
	// state dir (state.Store.Salt), or a value that did not change while
	// kubediff was down reads as changed after a restart; nil picks a
	// random one for this process.
	Salt []byte
}

// secretPaths hold a Secret's values.
var secretPaths = []string{"/data/*", "/stringData/*"}

// objectCopies are annotations in which tools keep a copy of the whole
// object as they last applied it: a Secret's values, a ConfigMap's
// sensitive keys, env vars. They are hidden whole, for every type (the
// bookkeeping default also ignores kubectl's, but can be turned off).
var objectCopies = []string{
	"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
	"/metadata/annotations/kapp.k14s.io~1original",
	"/metadata/annotations/kapp.k14s.io~1original-diff",
	"/metadata/annotations/objectset.rio.cattle.io~1applied",
}

// helmReleasePaths hold a Helm release (chart values, passwords included,
// gzipped and base64'd) when Helm stores releases in ConfigMaps; Helm's
// default Secret storage is covered by secretPaths.
var helmReleasePaths = []string{"/data/release"}

type redactor struct {
	salt      []byte
	paths     pathRules
	secret    pathRules
	copies    pathRules
	helm      pathRules
	keys      []string
	sensitive sync.Map // name → bool: the same few env and key names recur
	// safeAnnotations and userSafeAnnotations are the keys of a Secret's
	// annotations shown in the clear: the built-in ones, the user's patterns.
	safeAnnotations     map[string]bool
	userSafeAnnotations []string
}

func newRedactor(opts RedactOptions) (*redactor, error) {
	r := &redactor{salt: opts.Salt}
	if r.salt == nil {
		r.salt = make([]byte, 32)
		if _, err := rand.Read(r.salt); err != nil {
			return nil, err
		}
	}
	var err error
	if r.paths, err = parsePathRules(opts.Paths); err != nil {
		return nil, fmt.Errorf("redact path: %w", err)
	}
	r.secret, _ = parsePathRules(secretPaths)
	r.copies, _ = parsePathRules(objectCopies)
	r.helm, _ = parsePathRules(helmReleasePaths)
	if err := glob.Valid(opts.Keys); err != nil {
		return nil, fmt.Errorf("redact key pattern: %w", err)
	}
	for _, k := range opts.Keys {
		r.keys = append(r.keys, strings.ToLower(k))
	}
	if err := glob.Valid(opts.SafeSecretAnnotations); err != nil {
		return nil, fmt.Errorf("safe Secret annotation pattern: %w", err)
	}
	r.userSafeAnnotations = opts.SafeSecretAnnotations
	r.safeAnnotations = make(map[string]bool, len(safeSecretAnnotations))
	for _, k := range safeSecretAnnotations {
		r.safeAnnotations[k] = true
	}
	return r, nil
}

// objectRedaction redacts the values of one object. Each hash is keyed to
// the object and the field, so it says only whether that field's value
// changed: equal values in two objects, or in two fields, hash apart, and
// the hash is no oracle for guessing a value seen elsewhere.
type objectRedaction struct {
	r     *redactor
	scope string
}

func (r *redactor) forObject(obj any, res change.Resource) objectRedaction {
	meta, _ := nestedMap(obj, "metadata")
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	return objectRedaction{r: r, scope: res.GVR.Group + "/" + res.GVR.Resource + "/" + ns + "/" + name}
}

// hash returns what a value is replaced with: a short hash keyed to the
// salt, the object and the field.
func (o objectRedaction) hash(field string, v any) string {
	b, ok := v.(string)
	if !ok {
		j, _ := json.Marshal(v)
		b = string(j)
	}
	mac := hmac.New(sha256.New, o.r.salt)
	mac.Write([]byte(o.scope))
	mac.Write([]byte{0})
	mac.Write([]byte(field))
	mac.Write([]byte{0})
	mac.Write([]byte(b))
	return "*** redacted " + hex.EncodeToString(mac.Sum(nil)[:4]) + " ***"
}

// replace is the rewrite of a value found sensitive in field.
func (o objectRedaction) replace(field string, v any) (any, action) {
	if s, ok := v.(string); ok && isRedacted(s) {
		return v, keep // already redacted by the cache transform
	}
	return o.hash(field, v), replace
}

// isRedacted recognises a hash's form, so redacting twice (in the cache
// transform, then in Diff) changes nothing.
func isRedacted(s string) bool {
	return len(s) == len("*** redacted 01234567 ***") && strings.HasPrefix(s, "*** redacted ") && strings.HasSuffix(s, " ***")
}

// redact returns obj with sensitive values replaced, copying only what it
// changes.
func (r *redactor) redact(obj any, res change.Resource) map[string]any {
	o := r.forObject(obj, res)
	core := res.GVR.Group == ""
	if core && res.GVR.Resource == "secrets" {
		values := secretValues(obj)
		obj, _ = applyRules(obj, r.secret, o.replace)
		obj = o.redactSecretMetadata(obj, values)
	}
	if core && res.GVR.Resource == "configmaps" && isHelmRelease(obj) {
		obj, _ = applyRules(obj, r.helm, o.replace)
	}
	obj, _ = applyRules(obj, r.copies, o.replace)
	obj, _ = applyRules(obj, r.paths, o.replace)
	if len(r.keys) > 0 {
		if core && res.GVR.Resource == "configmaps" {
			obj = o.redactConfigMapKeys(obj)
		}
		if r.hasSensitiveEnv(obj) {
			obj, _ = o.redactEnv(obj)
		}
	}
	m, _ := obj.(map[string]any)
	return m
}

func (o objectRedaction) redactConfigMapKeys(obj any) any {
	out, _ := rewriteChildren(obj, func(key string, data any) (any, action) {
		if key != "data" && key != "binaryData" {
			return data, keep
		}
		return changedTo(rewriteChildren(data, func(k string, v any) (any, action) {
			if o.r.sensitiveKey(k) {
				return o.replace(k, v)
			}
			return v, keep
		}))
	})
	return out
}

// redactEnv redacts the value of every env var whose name looks sensitive,
// wherever a pod template sits (Pods, Deployments, CronJobs, custom
// resources embedding one).
func (o objectRedaction) redactEnv(v any) (any, bool) {
	return rewriteChildren(v, func(key string, child any) (any, action) {
		if list, ok := child.([]any); ok && key == "env" {
			return changedTo(rewriteChildren(list, func(_ string, item any) (any, action) {
				m, _ := item.(map[string]any)
				name, _ := m["name"].(string)
				if _, hasValue := m["value"]; !hasValue || !o.r.sensitiveKey(name) {
					return item, keep
				}
				return changedTo(rewriteChildren(m, func(k string, v any) (any, action) {
					if k == "value" {
						return o.replace("env/"+name, v)
					}
					return v, keep
				}))
			}))
		}
		return changedTo(o.redactEnv(child))
	})
}

func (r *redactor) sensitiveKey(name string) bool {
	if v, ok := r.sensitive.Load(name); ok {
		return v.(bool)
	}
	match := glob.MatchAny(r.keys, strings.ToLower(name))
	r.sensitive.Store(name, match)
	return match
}

// hasSensitiveEnv reports, without allocating, whether redactEnv would
// change anything: most updates carry no env var needing redaction, or
// carry them already redacted by the cache transform.
func (r *redactor) hasSensitiveEnv(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if list, ok := child.([]any); ok && k == "env" {
				for _, item := range list {
					m, _ := item.(map[string]any)
					name, _ := m["name"].(string)
					value, hasValue := m["value"]
					if s, isString := value.(string); hasValue && !(isString && isRedacted(s)) && r.sensitiveKey(name) {
						return true
					}
				}
				continue
			}
			if r.hasSensitiveEnv(child) {
				return true
			}
		}
	case []any:
		for _, child := range t {
			if r.hasSensitiveEnv(child) {
				return true
			}
		}
	}
	return false
}

// changedTo adapts rewriteChildren's result to a child action.
func changedTo(v any, changed bool) (any, action) {
	if changed {
		return v, replace
	}
	return v, keep
}

func nestedMap(obj any, key string) (map[string]any, bool) {
	m, _ := obj.(map[string]any)
	child, ok := m[key].(map[string]any)
	return child, ok
}

// isHelmRelease recognises a ConfigMap in which Helm keeps a release
// (Helm 3's configmap driver labels it owner=helm; Helm 2's, OWNER=TILLER).
func isHelmRelease(obj any) bool {
	meta, _ := nestedMap(obj, "metadata")
	labels, _ := meta["labels"].(map[string]any)
	return labels["owner"] == "helm" || labels["OWNER"] == "TILLER"
}
