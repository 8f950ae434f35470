package record

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
// alone, or "" when neither is.
func (c Change) By() string {
	switch {
	case c.User != nil && c.Manager != nil:
		return c.User.String() + " (" + c.Manager.Name + ")"
	case c.User != nil:
		return c.User.String()
	case c.Manager != nil:
		return c.Manager.Name
	}
	return ""
}

// Named says whether name names the user: the name the API server
// authenticated ("alice", "system:serviceaccount:shop:deployer"), or for
// a ServiceAccount the form String gives ("ServiceAccount shop/deployer"),
// which people read in text output and on the history's page. Nil names
// no one.
func (u *User) Named(name string) bool {
	return u != nil && name != "" && (u.Name == name || u.ServiceAccount != nil && u.String() == name)
}
