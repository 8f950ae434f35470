package diff

import (
	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/rbacwords"
)

// access says in sentences what access a change of a Role, ClusterRole,
// RoleBinding or ClusterRoleBinding gave or took away (pkg/rbacwords),
// and nothing for any other kind, at the cost of one string comparison.
// It reads the objects as watched, before pruning: a role's rules and a
// binding's subjects are never redacted, and an ignore rule that prunes
// them from both sides leaves nothing to compare, as it should.
func access(in change.Event) []string {
	if in.Resource.GVR.Group != rbacwords.Group {
		return nil
	}
	kind := in.Resource.Kind
	if kind == "" {
		kind = in.Object().GetKind()
	}
	if !rbacwords.Describes(rbacwords.Group, kind) {
		return nil
	}
	var old, new map[string]any
	if in.Old != nil {
		old = in.Old.Object
	}
	if in.New != nil && in.Type != change.Deleted {
		new = in.New.Object
	}
	return rbacwords.Describe(kind, old, new)
}
