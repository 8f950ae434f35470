package rbacwords

import "slices"

// Permission is one verb a role grants on one thing: a resource of an
// API group (all its objects, or the one named), or a non-resource URL.
// The fields are a PolicyRule's, one value each; "*" is a wildcard, as
// in the rule.
type Permission struct {
	Verb           string
	APIGroup       string
	Resource       string
	ResourceName   string // "" for every object of the resource
	NonResourceURL string // set for a URL; APIGroup, Resource and ResourceName are then ""
}

// Subject is one subject of a binding: a User, a Group or a
// ServiceAccount (Namespace set only for a ServiceAccount, to the
// binding's namespace when the subject names none).
type Subject struct {
	Kind, Name, Namespace string
}

// PermissionsChanged returns what a Role or ClusterRole grants after
// (new) that it did not before (old), and what it no longer grants, as
// the sentences Describe says them compare: as sets, so reordering gains
// nothing. ok is false when either side holds too many permissions to
// compare (more than 200,000, or 64 verbs).
func PermissionsChanged(old, new map[string]any) (gained, lost []Permission, ok bool) {
	verbs := &verbNames{index: map[string]uint64{}}
	before, okBefore := readPerms(old, verbs)
	after, okAfter := readPerms(new, verbs)
	if !okBefore || !okAfter {
		return nil, nil, false
	}
	return permissions(minus(after, before), verbs), permissions(minus(before, after), verbs), true
}

// permissions lists a set's permissions in a stable order.
func permissions(ps permSet, verbs *verbNames) []Permission {
	var out []Permission
	for t, bits := range ps {
		for i, verb := range verbs.names {
			if bits&(1<<i) != 0 {
				out = append(out, Permission{Verb: verb, APIGroup: t.group, Resource: t.resource, ResourceName: t.name, NonResourceURL: t.url})
			}
		}
	}
	slices.SortFunc(out, func(a, b Permission) int {
		for _, c := range [][2]string{{a.APIGroup, b.APIGroup}, {a.Resource, b.Resource}, {a.ResourceName, b.ResourceName},
			{a.NonResourceURL, b.NonResourceURL}, {a.Verb, b.Verb}} {
			if c[0] != c[1] {
				if c[0] < c[1] {
					return -1
				}
				return 1
			}
		}
		return 0
	})
	return out
}

// SubjectsChanged returns who a RoleBinding or ClusterRoleBinding binds
// after (new) that it did not before (old), and who it no longer binds;
// every subject, when the two states bind different roles (two states
// seen across a watch gap), as Describe says it.
func SubjectsChanged(old, new map[string]any) (gained, lost []Subject) {
	oldSubjects, newSubjects := subjectList(old), subjectList(new)
	if roleRefOf(old) != roleRefOf(new) {
		return newSubjects, oldSubjects
	}
	return subtractSubjects(newSubjects, oldSubjects), subtractSubjects(oldSubjects, newSubjects)
}

// roleRefOf is a binding's roleRef as one comparable value; zero for no
// object.
func roleRefOf(obj map[string]any) [2]string {
	ref, _ := obj["roleRef"].(map[string]any)
	return [2]string{str(ref["kind"]), str(ref["name"])}
}

// subjectList reads a binding's subjects, each once, in order.
func subjectList(obj map[string]any) []Subject {
	list, _ := obj["subjects"].([]any)
	bindingNS, _ := metadata(obj)
	out := make([]Subject, 0, len(list))
	for _, item := range list {
		s, _ := item.(map[string]any)
		subj := Subject{Kind: str(s["kind"]), Name: str(s["name"])}
		if subj.Kind == "ServiceAccount" {
			subj.Namespace = str(s["namespace"])
			if subj.Namespace == "" {
				subj.Namespace = bindingNS
			}
		}
		if !slices.Contains(out, subj) {
			out = append(out, subj)
		}
	}
	return out
}

// words names a subject as people read it: a user by name ("alice"), a
// group as "group devs", a ServiceAccount as "ServiceAccount ci/deployer".
func (s Subject) words() string {
	switch s.Kind {
	case "User":
		return s.Name
	case "Group":
		return "group " + s.Name
	case "ServiceAccount":
		return "ServiceAccount " + s.Namespace + "/" + s.Name
	}
	return s.Kind + " " + s.Name
}

// subtractSubjects is a without what b holds, in a's order.
func subtractSubjects(a, b []Subject) []Subject {
	var out []Subject
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
