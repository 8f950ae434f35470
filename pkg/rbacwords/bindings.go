package rbacwords

// describeBinding says who gains or loses a role through a binding. A
// binding's roleRef cannot change (the API refuses it: a new role is a
// delete and a create), but two states seen across a watch gap may still
// differ in it: then every subject before loses the old role and every
// subject after gains the new one (SubjectsChanged).
func describeBinding(kind string, old, new map[string]any) []sentence {
	gained, lost := SubjectsChanged(old, new)
	var out []sentence
	for _, s := range gained {
		out = append(out, sentence{text: s.words() + " gains " + roleWords(kind, new) + " through " + objectName(kind, new), gained: true})
	}
	for _, s := range lost {
		out = append(out, sentence{text: s.words() + " loses " + roleWords(kind, old) + " through " + objectName(kind, old)})
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
