package rbacwords

// describeBinding says who gains or loses a role through a binding. A
// binding's roleRef cannot change (the API refuses it: a new role is a
// delete and a create), but two states seen across a watch gap may still
// differ in it: then every subject before loses the old role and every
// subject after gains the new one.
func describeBinding(kind string, old, new map[string]any) []sentence {
	oldRole, newRole := roleWords(kind, old), roleWords(kind, new)
	oldSubjects, newSubjects := subjects(old), subjects(new)
	lost, gained := oldSubjects, newSubjects
	if oldRole == newRole {
		lost, gained = subtract(oldSubjects, newSubjects), subtract(newSubjects, oldSubjects)
	}
	var out []sentence
	for _, s := range gained {
		out = append(out, sentence{text: s + " gains " + newRole + " through " + objectName(kind, new), gained: true})
	}
	for _, s := range lost {
		out = append(out, sentence{text: s + " loses " + oldRole + " through " + objectName(kind, old)})
	}
	return out
}

// roleWords names the role a binding grants, where it grants it: a
// ClusterRoleBinding's ClusterRole by its name ("cluster-admin"), a
// RoleBinding's role with its kind and namespace ("Role dev/editor in
// dev", "ClusterRole edit in dev"). "" for no object.
func roleWords(kind string, obj map[string]any) string {
	if obj == nil {
		return ""
	}
	ref, _ := obj["roleRef"].(map[string]any)
	refKind, _ := ref["kind"].(string)
	name, _ := ref["name"].(string)
	if kind == "ClusterRoleBinding" {
		return name
	}
	ns, _ := metadata(obj)
	if refKind == "Role" {
		return "Role " + ns + "/" + name + " in " + ns
	}
	return refKind + " " + name + " in " + ns
}

// subjects names a binding's subjects as people read them: a user by
// name ("alice"), a group as "group devs", a ServiceAccount as
// "ServiceAccount ci/deployer" (in the binding's namespace when it names
// none), each once, in the binding's order.
func subjects(obj map[string]any) []string {
	list, _ := obj["subjects"].([]any)
	bindingNS, _ := metadata(obj)
	out := make([]string, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, item := range list {
		s, _ := item.(map[string]any)
		kind, _ := s["kind"].(string)
		name, _ := s["name"].(string)
		ns, _ := s["namespace"].(string)
		var words string
		switch kind {
		case "User":
			words = name
		case "Group":
			words = "group " + name
		case "ServiceAccount":
			if ns == "" {
				ns = bindingNS
			}
			words = "ServiceAccount " + ns + "/" + name
		default:
			words = kind + " " + name
		}
		if !seen[words] {
			seen[words] = true
			out = append(out, words)
		}
	}
	return out
}

// subtract is a without what b holds, in a's order.
func subtract(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if !in[s] {
			out = append(out, s)
		}
	}
	return out
}
