package rules

import (
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/kubediff/kubediff/pkg/rbacwords"
	"github.com/kubediff/kubediff/pkg/record"
)

// celRBAC is record.rbac: for a Role or ClusterRole, the permissions it
// gained and lost; for a RoleBinding or ClusterRoleBinding, the subjects
// it gained and lost; computed from the object's states before and after
// as the record's access sentences are (pkg/rbacwords), when a rule
// reads it. Absent (false) for any other kind, and for a role holding
// too many permissions to compare (its sentence says so).
func celRBAC(c *record.Change, old, new map[string]any) (ref.Val, bool) {
	group, _, _ := strings.Cut(c.APIVersion, "/")
	if !rbacwords.Describes(group, c.Kind) {
		return nil, false
	}
	a := types.DefaultTypeAdapter
	m := map[ref.Val]ref.Val{}
	var gained, lost []rbacwords.Permission
	var subjectsGained, subjectsLost []rbacwords.Subject
	if c.Kind == "Role" || c.Kind == "ClusterRole" {
		var ok bool
		if gained, lost, ok = rbacwords.PermissionsChanged(old, new); !ok {
			return nil, false
		}
	} else {
		subjectsGained, subjectsLost = rbacwords.SubjectsChanged(old, new)
	}
	m[keyGained], m[keyLost] = celPermissions(gained), celPermissions(lost)
	m[keySubjectsGained], m[keySubjectsLost] = celSubjects(subjectsGained), celSubjects(subjectsLost)
	return types.NewRefValMap(a, m), true
}

func celPermissions(ps []rbacwords.Permission) ref.Val {
	out := make([]ref.Val, len(ps))
	for i, p := range ps {
		out[i] = types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{
			keyVerb: types.String(p.Verb), keyAPIGroup: types.String(p.APIGroup), keyResource: types.String(p.Resource),
			keyResourceName: types.String(p.ResourceName), keyNonResourceURL: types.String(p.NonResourceURL),
		})
	}
	return types.NewRefValList(types.DefaultTypeAdapter, out)
}

func celSubjects(ss []rbacwords.Subject) ref.Val {
	out := make([]ref.Val, len(ss))
	for i, s := range ss {
		out[i] = types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{
			keyKind: types.String(s.Kind), keyName: types.String(s.Name), keyNamespace: types.String(s.Namespace),
		})
	}
	return types.NewRefValList(types.DefaultTypeAdapter, out)
}

// record.rbac's keys, made once.
var (
	keyGained, keyLost, keySubjectsGained, keySubjectsLost   = types.String("gained"), types.String("lost"), types.String("subjectsGained"), types.String("subjectsLost")
	keyVerb, keyAPIGroup, keyResourceName, keyNonResourceURL = types.String("verb"), types.String("apiGroup"), types.String("resourceName"), types.String("nonResourceURL")
)
