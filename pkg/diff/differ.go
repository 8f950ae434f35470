// Package diff turns an observed change of one object into a change
// record: which object, and for an update which fields changed, as JSON
// Pointers with their old and new values, and who changed them.
//
// An update goes through a fixed sequence of passes, all visible in
// Differ.Diff: prune ignored fields, redact sensitive values, compare
// (keyed lists by key), keep what is news, condense (line diffs of
// multi-line strings, long values cut), summarize, attribute, say what
// access an RBAC change gave or took away (pkg/rbacwords), render. The
// first two also run before an object is cached (Differ.CacheTransform), so the cache is
// smaller and never holds a secret in the clear.
package diff

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
)

// Options configure a Differ.
type Options struct {
	// Rules decide which fields are ignored.
	Rules Rules
	// Redact adds redaction on top of Secrets, which are always redacted.
	Redact RedactOptions
	// ListKeys tells which lists are keyed; nil compares all by position.
	ListKeys ListKeys
	// Patch adds an RFC 6902 JSON Patch to update records.
	Patch bool
	// Unified adds a unified YAML diff to update records (for text output).
	Unified bool
	// CachedObjects says inputs carry objects that went through
	// CacheTransform (as the watcher's do), so ignored fields are already
	// gone and values redacted: Diff skips that work.
	CachedObjects bool
	// Now returns the record time; nil means time.Now.
	Now func() time.Time
}

// Differ turns inputs into change records. It is safe for concurrent use:
// every reflector calls it from its own goroutine.
type Differ struct {
	fingerprint string
	rules       *compiledRules
	redactor    *redactor
	keys        ListKeys
	patch       bool
	unified     bool
	cached      bool
	now         func() time.Time
}

// New returns a Differ, or an error naming a malformed rule.
func New(opts Options) (*Differ, error) {
	rules, err := compileRules(opts.Rules)
	if err != nil {
		return nil, err
	}
	red, err := newRedactor(opts.Redact)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Differ{fingerprint: fingerprint(opts), rules: rules, redactor: red, keys: opts.ListKeys, patch: opts.Patch, unified: opts.Unified, cached: opts.CachedObjects, now: now}, nil
}

// RulesFingerprint identifies what CacheTransform does: the rules, the
// redaction and the built-in lists of both. Objects cached (and stored in
// the state dir) under another fingerprint must go through
// CacheTransform again, or a key newly redacted would still show its old
// value in the clear.
func (d *Differ) RulesFingerprint() string { return d.fingerprint }

func fingerprint(opts Options) string {
	b, _ := json.Marshal(struct {
		Rules                       Rules
		Paths, Keys                 []string
		Defaults                    []DefaultRule
		DefaultPaths                [][]string
		Secret, Copies, HelmRelease []string
		// SafeSecretAnnotations are the built-in and the user's: a
		// Secret stored before either changed (or before any annotation
		// of a Secret was redacted) is transformed again.
		SafeSecretAnnotations [2][]string
	}{opts.Rules, opts.Redact.Paths, opts.Redact.Keys, DefaultRules, defaultPaths(), secretPaths, objectCopies, helmReleasePaths,
		[2][]string{safeSecretAnnotations, opts.Redact.SafeSecretAnnotations}})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func defaultPaths() [][]string {
	var out [][]string
	for _, r := range DefaultRules {
		out = append(out, append(slices.Clone(r.resources), r.paths...))
	}
	return out
}

// Diff returns the record of the watcher's event, and false when there is
// nothing worth reporting (an update whose only changes are ignored).
// When the update did change the object, only not in a way worth
// reporting (a replica counter, a Pod starting up: what the default
// rules' news filters hold back), the record returned with false says so
// (Quiet): the history still keeps the object's new state.
func (d *Differ) Diff(in change.Event) (record.Change, bool) {
	c := d.header(in)
	// An object a default rule hides (Helm's release storage) has no
	// record; an update of it is quiet, so the history still has its state.
	hidden := d.rules.forResource(in.Resource).hides(in.Object().Object)
	switch {
	case hidden && in.Type != change.Updated:
		return record.Change{}, false
	case in.Type == change.Added:
		c.Manager = attribute(nil, in.New.Object, nil)
		c.Access = access(in)
		c.ID = c.StableID()
		return c, true
	case in.Type == change.Deleted:
		if in.FinalStateUnknown {
			// An empty version also makes a takeover replay it rather
			// than skip it as already delivered.
			c.ResourceVersion, c.LastSeenResourceVersion = "", c.ResourceVersion
		}
		c.Access = access(in)
		c.ID = c.StableID()
		return c, true
	}

	// 1–2. Prune ignored fields, then redact: everything after works on
	// less, and no value reaches a record unredacted.
	oldObj, newObj := d.prepare(in.Old.Object, in.Resource), d.prepare(in.New.Object, in.Resource)
	// 3. Compare, lists with keys item by item.
	c.Changes = compare(oldObj, newObj, d.keyTree(in.New))
	// 4. Keep what is news: a Pod starting up, a controller's counters
	// and a condition's details without a status change are not.
	compared := c.Changes
	if c.Changes = keepNews(d.rules.forResource(in.Resource).news, oldObj, newObj, compared); len(c.Changes) == 0 || hidden {
		if len(compared) == 0 {
			return record.Change{}, false
		}
		c.Changes = compared
		return c, false
	}
	// 5. Condense: changed lines of multi-line strings, and no value over
	// maxValueBytes carried whole.
	condense(c.Changes)
	// 6. Summarize for log stacks that index scalars.
	c.Changed = record.Summarize(c.Changes)
	c.ID = c.StableID()
	// 7. Attribute: who wrote it, from managedFields (kept, slim, by
	// pruning).
	c.Manager = attribute(in.Old.Object, in.New.Object, c.Changes)
	// 8. Say what access an RBAC change gave or took away.
	c.Access = access(in)
	// 9. Render the optional forms.
	if d.patch {
		c.Patch = jsonPatch(oldObj, newObj)
	}
	if d.unified {
		c.Unified = unifiedDiff(oldObj, newObj, c)
	}
	return c, true
}

// Quiet says whether a record Diff declined (false) still stands for a
// change of the object's state, which the history keeps without a record.
func Quiet(c record.Change) bool { return len(c.Changes) > 0 }

// header is what every record says about its object.
func (d *Differ) header(in change.Event) record.Change {
	obj := in.Object()
	return record.Change{
		Time:            record.Timestamp(d.now()),
		Type:            string(in.Type),
		APIVersion:      obj.GetAPIVersion(),
		Kind:            obj.GetKind(),
		Resource:        in.Resource.GVR.Resource,
		Namespace:       obj.GetNamespace(),
		Name:            obj.GetName(),
		UID:             string(obj.GetUID()),
		ResourceVersion: obj.GetResourceVersion(),
		Labels:          d.labels(obj, in.Resource),
		Owner:           owner(obj),
		AfterGap:        in.AfterGap,
	}
}

// labels returns the object's labels as records may show them: a
// Secret's label can hold one of its values (redactCopiesOfValues).
// Cached objects were redacted already.
func (d *Differ) labels(obj *unstructured.Unstructured, r change.Resource) map[string]string {
	if d.cached || r.GVR.Group != "" || r.GVR.Resource != "secrets" {
		return obj.GetLabels()
	}
	redacted := unstructured.Unstructured{Object: d.redactor.redact(obj.Object, r)}
	return redacted.GetLabels()
}

// owner returns the object's controller, from its ownerReferences.
func owner(obj *unstructured.Unstructured) *record.Owner {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return &record.Owner{Kind: ref.Kind, Name: ref.Name}
		}
	}
	return nil
}

// prepare prunes ignored fields and redacts sensitive values. Objects from
// the cache had both done by CacheTransform, but for the bookkeeping the
// cache keeps (keptInCache).
func (d *Differ) prepare(obj map[string]any, r change.Resource) map[string]any {
	if d.cached {
		return prune(obj, keptInCache).(map[string]any)
	}
	return d.redactor.redact(prune(obj, d.rules.forResource(r).paths), r)
}

// Shown is obj as watch shows it: every field the rules ignore pruned
// (managedFields and resourceVersion too, which the cache keeps for its
// own use) and sensitive values redacted. The history's two-moment diff
// reads kept states through it, so that it shows what watch would have,
// not managedFields reshuffling.
func (d *Differ) Shown(obj map[string]any, r change.Resource) map[string]any {
	return d.redactor.redact(prune(obj, d.rules.forResource(r).paths), r)
}

// Redact is obj with every value the redaction rules hide replaced (what
// is already replaced stays as it is). The history reads kept states
// through it: a state kept under older rules (before a Secret's
// annotations were redacted, say) then shows nothing the current rules
// hide.
func (d *Differ) Redact(obj map[string]any, r change.Resource) map[string]any {
	return d.redactor.redact(obj, r)
}

func (d *Differ) keyTree(u *unstructured.Unstructured) *KeyTree {
	if d.keys == nil {
		return nil
	}
	return d.keys.KeyTree(u.GroupVersionKind())
}

// pointerLess orders pointers segment by segment, numbers numerically, so
// that /spec/containers/2 sorts before /spec/containers/10.
func pointerLess(a, b string) bool {
	for a != "" && b != "" {
		var as, bs string
		as, a = nextSegment(a)
		bs, b = nextSegment(b)
		if as == bs {
			continue
		}
		ai, aerr := strconv.Atoi(as)
		bi, berr := strconv.Atoi(bs)
		if aerr == nil && berr == nil {
			return ai < bi
		}
		return as < bs
	}
	return len(a) < len(b)
}

// nextSegment splits a pointer "/seg/rest" into seg and "/rest", without
// building strings: sorting a Pod's changes compares many pointers.
func nextSegment(p string) (seg, rest string) {
	_, p, _ = strings.Cut(p, "/")
	i := strings.IndexByte(p, '/')
	if i < 0 {
		return p, ""
	}
	if rest = p[i:]; rest == "/" {
		rest = "" // an empty last segment ends the pointer, as it always has
	}
	return p[:i], rest
}
