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

	"github.com/kubediff/kubediff/pkg/discovery"
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
	// Salt keys the hashes shown in place of values; nil picks a random one
	// per process, so hashes compare within one run and reveal nothing
	// across runs.
	Salt []byte
}

// secretPaths hold a Secret's values.
var secretPaths = []string{"/data/*", "/stringData/*"}

// lastApplied is a copy of the whole object as last applied with kubectl:
// a Secret's values, a ConfigMap's sensitive keys, env vars. It is hidden
// whole, for every type, in case the bookkeeping default that ignores it is
// turned off.
var lastApplied = []string{"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"}

type redactor struct {
	salt      []byte
	paths     pathRules
	secret    pathRules
	applied   pathRules
	keys      []string
	sensitive sync.Map // name → bool: the same few env and key names recur
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
	r.applied, _ = parsePathRules(lastApplied)
	if err := glob.Valid(opts.Keys); err != nil {
		return nil, fmt.Errorf("redact key pattern: %w", err)
	}
	for _, k := range opts.Keys {
		r.keys = append(r.keys, strings.ToLower(k))
	}
	return r, nil
}

// Redacted returns what a value is replaced with: a short keyed hash, so a
// reader sees whether two values are equal without learning either.
func (r *redactor) Redacted(v any) string {
	b, ok := v.(string)
	if !ok {
		j, _ := json.Marshal(v)
		b = string(j)
	}
	mac := hmac.New(sha256.New, r.salt)
	mac.Write([]byte(b))
	return "*** redacted " + hex.EncodeToString(mac.Sum(nil)[:4]) + " ***"
}

func (r *redactor) replaceValue(v any) (any, action) {
	if s, ok := v.(string); ok && isRedacted(s) {
		return v, keep // already redacted by the cache transform
	}
	return r.Redacted(v), replace
}

// isRedacted recognises Redacted's output, so redacting twice (in the
// cache transform, then in Diff) changes nothing.
func isRedacted(s string) bool {
	return len(s) == len("*** redacted 01234567 ***") && strings.HasPrefix(s, "*** redacted ") && strings.HasSuffix(s, " ***")
}

// redact returns obj with sensitive values replaced, copying only what it
// changes.
func (r *redactor) redact(obj any, res discovery.Resource) map[string]any {
	if res.GVR.Group == "" && res.GVR.Resource == "secrets" {
		obj, _ = applyRules(obj, r.secret, r.replaceValue)
	}
	obj, _ = applyRules(obj, r.applied, r.replaceValue)
	obj, _ = applyRules(obj, r.paths, r.replaceValue)
	if len(r.keys) > 0 {
		if res.GVR.Group == "" && res.GVR.Resource == "configmaps" {
			obj, _ = rewriteChildren(obj, func(key string, data any) (any, action) {
				if key != "data" && key != "binaryData" {
					return data, keep
				}
				return changedTo(rewriteChildren(data, func(k string, v any) (any, action) {
					if r.sensitiveKey(k) {
						return r.replaceValue(v)
					}
					return v, keep
				}))
			})
		}
		if r.hasSensitiveEnv(obj) {
			obj, _ = r.redactEnv(obj)
		}
	}
	m, _ := obj.(map[string]any)
	return m
}

// redactEnv redacts the value of every env var whose name looks sensitive,
// wherever a pod template sits (Pods, Deployments, CronJobs, custom
// resources embedding one).
func (r *redactor) redactEnv(v any) (any, bool) {
	return rewriteChildren(v, func(key string, child any) (any, action) {
		if list, ok := child.([]any); ok && key == "env" {
			return changedTo(rewriteChildren(list, func(_ string, item any) (any, action) {
				m, _ := item.(map[string]any)
				name, _ := m["name"].(string)
				if _, hasValue := m["value"]; !hasValue || !r.sensitiveKey(name) {
					return item, keep
				}
				return changedTo(rewriteChildren(m, func(k string, v any) (any, action) {
					if k == "value" {
						return r.replaceValue(v)
					}
					return v, keep
				}))
			}))
		}
		return changedTo(r.redactEnv(child))
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
