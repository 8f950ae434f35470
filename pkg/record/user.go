package record

import "strings"

// String names the user for people: the name the API server
// authenticated ("alice"), or for a ServiceAccount its kind and
// namespaced name ("ServiceAccount shop/deployer"), which reads as
// kubediff names objects, rather than system:serviceaccount:shop:deployer.
func (u User) String() string {
	if sa := u.ServiceAccount; sa != nil {
		return "ServiceAccount " + sa.Namespace + "/" + sa.Name
	}
	return u.Name
}

// By names who made the change for people: the user with the field
// manager in parentheses when both are known ("alice (kubectl)"), either
// alone, or "" when neither is; the release the object belongs to joins
// the parentheses ("helm (release web rev 7, chart web-1.4.2)", "alice
// (helm, release web rev 7)"), or stands alone when no one is known;
// not for an outside change (GitOps), which its GitOps note names.
func (c Change) By() string {
	var who string
	var notes []string
	switch {
	case c.User != nil:
		who = c.User.String()
		if c.Manager != nil {
			notes = append(notes, c.Manager.Name)
		}
	case c.Manager != nil:
		who = c.Manager.Name
	}
	// An outside change names its object's owner in its GitOps note
	// (GitOps.String), not as the release behind the write: it is not.
	if c.Release != nil && (c.GitOps == nil || c.GitOps.Via != ViaOutside) {
		notes = append(notes, c.Release.String())
	}
	switch {
	case len(notes) == 0:
		return who
	case who == "":
		return strings.Join(notes, ", ")
	}
	return who + " (" + strings.Join(notes, ", ") + ")"
}

// Circumstances are what people should know of how the change was seen,
// each in parentheses, for every people-facing sink alike: "(seen after
// a gap)" when the watch was cut off and it was found on relisting,
// "(with its namespace)" when the object was deleted by its namespace's
// deletion.
func (c Change) Circumstances() []string {
	var out []string
	if c.AfterGap {
		out = append(out, "(seen after a gap)")
	}
	if c.NamespaceDeleting {
		out = append(out, "(with its namespace)")
	}
	return out
}

// Named says whether name names the user: the name the API server
// authenticated ("alice", "system:serviceaccount:shop:deployer"), or for
// a ServiceAccount the form String gives ("ServiceAccount shop/deployer"),
// which people read in text output and on the history's page. Nil names
// no one.
func (u *User) Named(name string) bool {
	return u != nil && name != "" && (u.Name == name || u.ServiceAccount != nil && u.String() == name)
}
