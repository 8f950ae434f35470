package rules

import (
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/kubediff/kubediff/pkg/record"
)

// celRecord is the record as rules see it (recordDeclType), made of CEL
// values once per record: every rule then reads its fields without
// converting them again. A field that is unknown (no user, no manager)
// is left out, so that has(record.user) is false.
func celRecord(c *record.Change, old, new map[string]any) ref.Val {
	a := types.DefaultTypeAdapter
	m := map[ref.Val]ref.Val{
		keyType: types.String(c.Type), keyAPIVersion: types.String(c.APIVersion), keyKind: types.String(c.Kind),
		keyResource: types.String(c.Resource), keyNamespace: types.String(c.Namespace), keyName: types.String(c.Name),
		keyUID: types.String(c.UID), keyResourceVersion: types.String(c.ResourceVersion), keyAfterGap: types.Bool(c.AfterGap),
		keyNamespaceDeleting: types.Bool(c.NamespaceDeleting), keyChanged: types.String(c.Changed), keyChanges: celChanges(c.Changes),
	}
	m[keyLabels] = types.NewStringStringMap(a, c.Labels) // nil: empty
	if o := c.Owner; o != nil {
		m[keyOwner] = strings2(keyKind, o.Kind, keyName, o.Name)
	}
	if c.Manager != nil {
		m[keyManager] = celManager(c.Manager)
	}
	if c.User != nil {
		m[keyUser] = celUser(c.User)
	}
	if c.Release != nil {
		m[keyRelease] = celRelease(c.Release)
	}
	if c.GitOps != nil {
		m[keyGitOps] = celGitOps(c.GitOps)
	}
	if cl := c.Cluster; cl != nil {
		m[keyCluster] = strings2(keyName, cl.Name, keyID, cl.ID)
	}
	m[keyAccess] = types.NewStringList(a, stringsOrEmpty(c.Access))
	if rbac, ok := celRBAC(c, old, new); ok {
		m[keyRBAC] = rbac
	}
	return types.NewRefValMap(a, m)
}

func celManager(mg *record.Manager) ref.Val {
	return types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{keyName: types.String(mg.Name),
		keyOperation: types.String(mg.Operation), keySubresource: types.String(mg.Subresource), keyTime: types.String(mg.Time)})
}

func celUser(u *record.User) ref.Val {
	a := types.DefaultTypeAdapter
	user := map[ref.Val]ref.Val{keyName: types.String(u.Name), keyGroups: types.NewStringList(a, stringsOrEmpty(u.Groups))}
	if sa := u.ServiceAccount; sa != nil {
		user[keyServiceAccount] = strings2(keyNamespace, sa.Namespace, keyName, sa.Name)
	}
	return types.NewRefValMap(a, user)
}

// celRelease is the release as rules see it: every field, "" or 0 when
// unknown.
func celRelease(r *record.Release) ref.Val {
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, releaseValue(r))
}

// releaseValue is the release as rules and summaries read it.
func releaseValue(r *record.Release) map[string]any {
	return map[string]any{"tool": r.Tool, "kind": r.Kind, "namespace": r.Namespace, "name": r.Name, "revision": int64(r.Revision),
		"status": r.Status, "chart": r.Chart, "appVersion": r.AppVersion, "gitRevision": r.GitRevision,
		"startedAt": r.StartedAt, "finishedAt": r.FinishedAt}
}

// celGitOps is how the change stands to its GitOps owner as rules see
// it: every field, "" or 0 when unset, drift an empty list.
func celGitOps(g *record.GitOps) ref.Val {
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, gitopsValue(g))
}

// gitopsValue is the GitOps fact as rules and summaries read it.
func gitopsValue(g *record.GitOps) map[string]any {
	drift := make([]any, len(g.Drift))
	for i, f := range g.Drift {
		drift[i] = map[string]any{"path": f.Path, "field": f.Field, "declared": f.Declared, "undeclared": f.Undeclared,
			"before": f.Before, "now": f.Now, "truncated": f.Truncated}
	}
	return map[string]any{"via": g.Via, "tool": g.Tool, "kind": g.Kind, "namespace": g.Namespace, "name": g.Name,
		"declaredFrom": g.DeclaredFrom, "drift": drift, "reverts": g.Reverts, "driftSeconds": g.DriftSeconds}
}

func strings2(k1 ref.Val, v1 string, k2 ref.Val, v2 string) ref.Val {
	return types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{k1: types.String(v1), k2: types.String(v2)})
}

// celChanges are the changes; from is null for an add, to for a remove.
func celChanges(changes []record.FieldChange) ref.Val {
	a := types.DefaultTypeAdapter
	out := make([]ref.Val, len(changes))
	for i, fc := range changes {
		out[i] = types.NewRefValMap(a, map[ref.Val]ref.Val{
			keyOp: types.String(fc.Op), keyPath: types.String(fc.Path), keyField: types.String(fc.Field),
			keyFrom: a.NativeToValue(fc.From), keyTo: a.NativeToValue(fc.To),
		})
	}
	return types.NewRefValList(a, out)
}

// The record's keys, made once.
var (
	keyType, keyAPIVersion, keyKind, keyResource      = types.String("type"), types.String("apiVersion"), types.String("kind"), types.String("resource")
	keyNamespace, keyName, keyUID, keyResourceVersion = types.String("namespace"), types.String("name"), types.String("uid"), types.String("resourceVersion")
	keyAfterGap, keyChanged, keyChanges, keyLabels    = types.String("afterGap"), types.String("changed"), types.String("changes"), types.String("labels")
	keyOwner, keyManager, keyUser, keyCluster         = types.String("owner"), types.String("manager"), types.String("user"), types.String("cluster")
	keyOperation, keySubresource, keyTime, keyGroups  = types.String("operation"), types.String("subresource"), types.String("time"), types.String("groups")
	keyServiceAccount, keyID, keyAccess, keyRBAC      = types.String("serviceAccount"), types.String("id"), types.String("access"), types.String("rbac")
	keyRelease, keyNamespaceDeleting, keyGitOps       = types.String("release"), types.String("namespaceDeleting"), types.String("gitops")
	keyOp, keyPath, keyField, keyFrom, keyTo          = types.String("op"), types.String("path"), types.String("field"), types.String("from"), types.String("to")
)

// lazyRecord is the record as rules see it, each field made a CEL value
// when a rule reads it: a record most rules pass over after reading its
// kind costs that much and no more. What reads the record whole
// (iterating it, comparing it) gets celRecord.
type lazyRecord struct {
	c        *record.Change
	old, new map[string]any // the object's states, for record.rbac
	changes  ref.Val        // made on first read
	whole    traits.Mapper  // made on first need
}

var _ traits.Mapper = (*lazyRecord)(nil)

// Find implements traits.Mapper.
func (r *lazyRecord) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	c := r.c
	switch string(k) {
	case "type":
		return types.String(c.Type), true
	case "apiVersion":
		return types.String(c.APIVersion), true
	case "kind":
		return types.String(c.Kind), true
	case "resource":
		return types.String(c.Resource), true
	case "namespace":
		return types.String(c.Namespace), true
	case "name":
		return types.String(c.Name), true
	case "namespaceDeleting":
		return types.Bool(c.NamespaceDeleting), true
	case "changes":
		if r.changes == nil {
			r.changes = celChanges(c.Changes)
		}
		return r.changes, true
	case "labels":
		return types.NewStringStringMap(types.DefaultTypeAdapter, c.Labels), true
	case "manager":
		return optional(c.Manager != nil, func() ref.Val { return celManager(c.Manager) })
	case "user":
		return optional(c.User != nil, func() ref.Val { return celUser(c.User) })
	case "release":
		return optional(c.Release != nil, func() ref.Val { return celRelease(c.Release) })
	case "gitops":
		return optional(c.GitOps != nil, func() ref.Val { return celGitOps(c.GitOps) })
	case "access":
		return types.NewStringList(types.DefaultTypeAdapter, stringsOrEmpty(c.Access)), true
	case "rbac":
		return celRBAC(c, r.old, r.new)
	}
	return r.mapper().Find(key)
}

// optional is make's value when present: a field the record lacks is
// not found, so that has() says false.
func optional(present bool, make func() ref.Val) (ref.Val, bool) {
	if !present {
		return nil, false
	}
	return make(), true
}

// Get implements traits.Indexer.
func (r *lazyRecord) Get(key ref.Val) ref.Val {
	if v, ok := r.Find(key); ok {
		return v
	}
	return types.NewErr("no such key: %v", key)
}

// Contains implements traits.Container.
func (r *lazyRecord) Contains(key ref.Val) ref.Val {
	_, ok := r.Find(key)
	return types.Bool(ok)
}

func (r *lazyRecord) mapper() traits.Mapper {
	if r.whole == nil {
		r.whole = celRecord(r.c, r.old, r.new).(traits.Mapper)
	}
	return r.whole
}

// ConvertToNative implements ref.Val.
func (r *lazyRecord) ConvertToNative(t reflect.Type) (any, error) {
	return r.mapper().ConvertToNative(t)
}

// ConvertToType implements ref.Val.
func (r *lazyRecord) ConvertToType(t ref.Type) ref.Val { return r.mapper().ConvertToType(t) }

// Equal implements ref.Val.
func (r *lazyRecord) Equal(other ref.Val) ref.Val { return r.mapper().Equal(other) }

// Type implements ref.Val.
func (r *lazyRecord) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (r *lazyRecord) Value() any { return r.mapper().Value() }

// Iterator implements traits.Iterable.
func (r *lazyRecord) Iterator() traits.Iterator { return r.mapper().Iterator() }

// Size implements traits.Sizer.
func (r *lazyRecord) Size() ref.Val { return r.mapper().Size() }
