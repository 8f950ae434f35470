package rbacwords

import (
	"reflect"
	"slices"
	"strings"
)

// A role's rules are read as a set of permissions: a verb on a thing,
// the thing a resource of an API group (all its objects or one named) or
// a non-resource URL. A rule is the product of its lists; a role, the
// union of its rules. The set is kept as each thing's verbs, one bit a
// verb, so a role of thousands of rules is a few thousand map entries.
type thing struct {
	group, resource, name string
	url                   string // a non-resource URL; group, resource and name are then empty
}

// permSet is a role's permissions: each thing's verbs, as bits that
// verbNames names.
type permSet map[thing]uint64

// verbNames numbers the verbs two roles use, for their bits.
type verbNames struct {
	index map[string]uint64
	names []string
}

// bit is the verb's bit; false when a 65th verb comes.
func (v *verbNames) bit(verb string) (uint64, bool) {
	if b, ok := v.index[verb]; ok {
		return b, true
	}
	if len(v.names) == 64 {
		return 0, false
	}
	b := uint64(1) << len(v.names)
	v.index[verb] = b
	v.names = append(v.names, verb)
	return b, true
}

// maxPerms bounds the permissions read of one role. A rule is a product
// of lists, and a few rules of long lists could ask for millions; roles
// people write, and the bootstrap ones, hold a few thousand at most.
const maxPerms = 200_000

// describeRole says what a role grants that it did not, and no longer
// grants. A ClusterRole's rules hold in every namespace a
// ClusterRoleBinding binds it; a Role's in its namespace.
func describeRole(kind string, old, new map[string]any) []sentence {
	obj := new
	if obj == nil {
		obj = old
	}
	if old != nil && new != nil && reflect.DeepEqual(old["rules"], new["rules"]) {
		return nil // labels or annotations: the same access
	}
	name := objectName(kind, obj)
	verbs := &verbNames{index: map[string]uint64{}}
	before, okBefore := readPerms(old, verbs)
	after, okAfter := readPerms(new, verbs)
	if !okBefore || !okAfter {
		return []sentence{{text: name + "'s rules changed: too many permissions to compare"}}
	}
	scope := " in every namespace"
	if ns, _ := metadata(obj); kind == "Role" {
		scope = " in " + ns
	}
	via := ""
	if aggregated(old) || aggregated(new) {
		// The aggregation controller wrote these rules: the change
		// came from a role selected by the aggregationRule.
		via = " through aggregation"
	}
	var out []sentence
	for _, p := range phrases(minus(after, before), verbs, scope) {
		out = append(out, sentence{text: name + " now grants " + p.text + via, danger: p.danger, gained: true})
	}
	for _, p := range phrases(minus(before, after), verbs, scope) {
		out = append(out, sentence{text: name + " no longer grants " + p.text + via, danger: p.danger})
	}
	return out
}

func aggregated(obj map[string]any) bool {
	_, ok := obj["aggregationRule"].(map[string]any)
	return ok
}

// readPerms reads a role's rules; false when they hold more than
// maxPerms permissions or more than 64 verbs.
func readPerms(obj map[string]any, verbs *verbNames) (permSet, bool) {
	rules, _ := obj["rules"].([]any)
	size, ok := countThings(rules)
	if !ok {
		return nil, false
	}
	set := make(permSet, size)
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		var bits uint64
		for _, v := range anyList(rule["verbs"]) {
			b, ok := verbs.bit(str(v))
			if !ok {
				return nil, false
			}
			bits |= b
		}
		if urls := anyList(rule["nonResourceURLs"]); len(urls) > 0 {
			for _, u := range urls {
				set[thing{url: str(u)}] |= bits
			}
			continue
		}
		names := anyList(rule["resourceNames"])
		if len(names) == 0 {
			names = everyObject
		}
		for _, g := range anyList(rule["apiGroups"]) {
			for _, r := range anyList(rule["resources"]) {
				for _, n := range names {
					set[thing{group: str(g), resource: str(r), name: str(n)}] |= bits
				}
			}
		}
	}
	return set, true
}

// everyObject is the resourceNames of a rule that names none.
var everyObject = []any{""}

// countThings counts what rules grant verbs on, so that the set is made
// once at its size, and refuses rules of more than maxPerms permissions
// before they are read.
func countThings(rules []any) (int, bool) {
	n, perms := 0, 0
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		things := len(anyList(rule["nonResourceURLs"]))
		if things == 0 {
			things = len(anyList(rule["apiGroups"])) * len(anyList(rule["resources"])) * max(1, len(anyList(rule["resourceNames"])))
		}
		n += things
		if perms += things * max(1, len(anyList(rule["verbs"]))); perms > maxPerms {
			return 0, false
		}
	}
	return n, true
}

// minus is the verbs a grants on each thing that b does not.
func minus(a, b permSet) permSet {
	out := permSet{}
	for t, bits := range a {
		if d := bits &^ b[t]; d != 0 {
			out[t] = d
		}
	}
	return out
}

// phrase is what one sentence says is granted: "create on pods/exec in
// every namespace".
type phrase struct {
	text   string
	danger int
}

// phrases groups permissions the way a person would say them: the verbs
// on one thing together, then the things sharing those verbs together
// (the objects named of one resource, the resources of one API group).
func phrases(ps permSet, names *verbNames, scope string) []phrase {
	if len(ps) == 0 {
		return nil
	}
	// 1. Each thing, with its verbs, those of one danger apart from the
	// others: "impersonate on serviceaccounts" said first, not buried
	// among the verbs any editor has.
	type dangerous struct {
		thing
		danger int
	}
	verbs := map[dangerous][]string{}
	for t, bits := range ps {
		for i, verb := range names.names {
			if bits&(1<<i) != 0 {
				d := dangerous{t, dangerOf(t, verb)}
				verbs[d] = append(verbs[d], verb)
			}
		}
	}
	// 2. The things sharing their verbs, danger, group and whether
	// named: names of one resource, URLs, or resources of one group.
	type together struct {
		group, resource, verbs string
		named, url             bool
		danger                 int
	}
	groups := map[together]*phraseParts{}
	for t, vs := range verbs {
		slices.Sort(vs)
		key := together{group: t.group, verbs: strings.Join(vs, "\x00"), named: t.name != "", url: t.url != "", danger: t.danger}
		item := t.url
		if !key.url && key.named {
			key.resource, item = t.resource, t.name
		} else if !key.url {
			item = t.resource
		}
		parts := groups[key]
		if parts == nil {
			parts = &phraseParts{verbs: vs, group: t.group, url: key.url, resource: key.resource, danger: t.danger}
			groups[key] = parts
		}
		parts.items = append(parts.items, item)
	}
	out := make([]phrase, 0, len(groups))
	for _, parts := range groups {
		out = append(out, phrase{text: parts.say(scope), danger: parts.danger})
	}
	return out
}

// phraseParts is one phrase before it is said: verbs on items, which are
// URLs, resources of a group, or the names of objects of one resource.
type phraseParts struct {
	verbs    []string
	group    string
	resource string // set when items are names
	url      bool
	items    []string
	danger   int
}

func (p *phraseParts) say(scope string) string {
	slices.Sort(p.items)
	verbs := strings.Join(p.verbs, ", ")
	if slices.Contains(p.verbs, "*") {
		verbs = "every verb"
	}
	if p.url {
		return verbs + " on " + joinList(everyFirst(p.items, "every non-resource URL"))
	}
	things := joinList(everyFirst(p.items, "every resource"))
	if p.resource != "" {
		things = resourceWord(p.resource) + " " + joinList(p.items)
	}
	return verbs + " on " + things + groupWords(p.group) + scope
}

// everyFirst says "*" as every, first; the rest in order.
func everyFirst(items []string, every string) []string {
	if i := slices.Index(items, "*"); i >= 0 {
		rest := slices.Delete(slices.Clone(items), i, i+1)
		return append([]string{every}, rest...)
	}
	return items
}

func resourceWord(r string) string {
	if r == "*" {
		return "every resource"
	}
	return r
}

// groupWords names a rule's API group after its resources: nothing for
// the core group, which is what people mean by pods and secrets.
func groupWords(g string) string {
	switch g {
	case "":
		return ""
	case "*":
		return " in every API group"
	}
	return " in API group " + g
}
