package rbacwords

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// load reads an object the local control plane's API server created
// (kubectl get -o json), as the watcher decodes it.
func load(t testing.TB, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return obj
}

// decoded is v as the watcher hands it over: decoded JSON.
func decoded(t testing.TB, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

type rule struct {
	APIGroups       []string `json:"apiGroups,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	ResourceNames   []string `json:"resourceNames,omitempty"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
	Verbs           []string `json:"verbs"`
}

func role(t testing.TB, kind, namespace, name string, rules ...rule) map[string]any {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return decoded(t, map[string]any{"apiVersion": Group + "/v1", "kind": kind, "metadata": meta, "rules": rules})
}

type subject struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

func binding(t testing.TB, kind, namespace, name, roleKind, roleName string, subjects ...subject) map[string]any {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return decoded(t, map[string]any{"apiVersion": Group + "/v1", "kind": kind, "metadata": meta,
		"roleRef": map[string]any{"apiGroup": Group, "kind": roleKind, "name": roleName}, "subjects": subjects})
}

// filled is the aggregated role as the controller fills it: its
// aggregationRule, and the rules of the roles it selects, in order.
func filled(t testing.TB, file string, from ...string) map[string]any {
	obj := load(t, file)
	var rules []any
	for _, f := range from {
		rules = append(rules, load(t, f)["rules"].([]any)...)
	}
	obj["rules"] = rules
	return obj
}

func with(obj map[string]any, key string, v any) map[string]any {
	out := map[string]any{}
	for k, val := range obj {
		out[k] = val
	}
	out[key] = v
	return out
}

var (
	readConfigMaps = rule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}
	readSecrets    = rule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}
	everything     = rule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}
)

func TestDescribeRoles(t *testing.T) {
	view := filled(t, "view.json", "system_aggregate-to-view.json")
	edit := filled(t, "edit.json", "system_aggregate-to-edit.json", "system_aggregate-to-view.json")
	// The same rules in reverse order, the first rule split in two by
	// verb, and one rule's resources listed backwards.
	shuffled := slices.Clone(view["rules"].([]any))
	slices.Reverse(shuffled)
	first := shuffled[0].(map[string]any)
	getOnly, listWatch := with(first, "verbs", []any{"get"}), with(first, "verbs", []any{"list", "watch"})
	last := shuffled[len(shuffled)-1].(map[string]any)
	backwards := slices.Clone(last["resources"].([]any))
	slices.Reverse(backwards)
	shuffled = append([]any{getOnly, listWatch}, shuffled[1:len(shuffled)-1]...)
	shuffled = append(shuffled, with(last, "resources", backwards))

	for _, tt := range []struct {
		name     string
		kind     string
		old, new map[string]any
		want     []string
	}{
		{"cluster-admin created", "ClusterRole", nil, load(t, "cluster-admin.json"), []string{
			"ClusterRole cluster-admin now grants every verb on every non-resource URL",
			"ClusterRole cluster-admin now grants every verb on every resource in every API group in every namespace",
		}},
		{"cluster-admin deleted", "ClusterRole", load(t, "cluster-admin.json"), nil, []string{
			"ClusterRole cluster-admin no longer grants every verb on every non-resource URL",
			"ClusterRole cluster-admin no longer grants every verb on every resource in every API group in every namespace",
		}},
		{"a Role gaining secrets", "Role",
			role(t, "Role", "dev", "reader", readConfigMaps),
			role(t, "Role", "dev", "reader", rule{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}}),
			[]string{"Role dev/reader now grants get, list, watch on secrets in dev"}},
		{"a Role losing list on secrets", "Role",
			role(t, "Role", "dev", "reader", readSecrets),
			role(t, "Role", "dev", "reader", rule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "watch"}}),
			[]string{"Role dev/reader no longer grants list on secrets in dev"}},
		{"a wildcard", "Role", role(t, "Role", "dev", "ops", readConfigMaps), role(t, "Role", "dev", "ops", readConfigMaps, everything),
			[]string{"Role dev/ops now grants every verb on every resource in every API group in dev"}},
		{"wildcard verbs on one group's resources", "ClusterRole", nil,
			role(t, "ClusterRole", "", "apps-admin", rule{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/scale"}, Verbs: []string{"*"}}),
			[]string{"ClusterRole apps-admin now grants every verb on deployments, deployments/scale in API group apps in every namespace"}},
		{"resourceNames", "Role", role(t, "Role", "dev", "app", readConfigMaps),
			role(t, "Role", "dev", "app", readConfigMaps, rule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db-password", "api-token"}, Verbs: []string{"get"}}),
			[]string{"Role dev/app now grants get on secrets api-token, db-password in dev"}},
		{"nonResourceURLs", "ClusterRole", nil,
			role(t, "ClusterRole", "", "probes", rule{NonResourceURLs: []string{"/livez", "/healthz"}, Verbs: []string{"get"}}),
			[]string{"ClusterRole probes now grants get on /healthz, /livez"}},
		{"the most dangerous first", "ClusterRole", role(t, "ClusterRole", "", "ops"),
			role(t, "ClusterRole", "", "ops",
				readConfigMaps,
				rule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}},
				rule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
				rule{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}},
				readSecrets),
			[]string{
				"ClusterRole ops now grants impersonate on users in every namespace",
				"ClusterRole ops now grants get, list, watch on secrets in every namespace",
				"ClusterRole ops now grants create on pods/exec in every namespace",
				"ClusterRole ops now grants create on pods in every namespace",
				"ClusterRole ops now grants get, list, watch on configmaps in every namespace",
			}},
		{"reordered and split rules say nothing", "ClusterRole", view, with(view, "rules", shuffled), nil},
		{"labels only say nothing", "ClusterRole", view, with(view, "metadata", map[string]any{"name": "view", "labels": map[string]any{"team": "a"}}), nil},
		{"view gains through aggregation", "ClusterRole", view, with(view, "rules", append(slices.Clone(view["rules"].([]any)),
			decoded(t, rule{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch"}}))),
			[]string{"ClusterRole view now grants get, list, watch on widgets in API group example.com in every namespace through aggregation"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Describe(tt.kind, tt.old, tt.new)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}

	t.Run("edit filled by aggregation", func(t *testing.T) {
		got := Describe("ClusterRole", load(t, "edit.json"), edit)
		if len(got) != MaxSentences+1 || !strings.HasPrefix(got[MaxSentences], "and ") || !strings.HasSuffix(got[MaxSentences], " more") {
			t.Fatalf("want %d sentences and a count of the rest, got %d:\n  %s", MaxSentences, len(got), strings.Join(got, "\n  "))
		}
		for _, s := range got[:MaxSentences] {
			if !strings.HasPrefix(s, "ClusterRole edit now grants ") || !strings.HasSuffix(s, " through aggregation") {
				t.Errorf("sentence %q does not say edit now grants through aggregation", s)
			}
		}
		// edit may impersonate ServiceAccounts, and read secrets: said first.
		if want := "ClusterRole edit now grants impersonate on serviceaccounts in every namespace through aggregation"; got[0] != want {
			t.Errorf("first sentence %q, want %q", got[0], want)
		}
		if !strings.Contains(got[1], " secrets") {
			t.Errorf("second sentence %q does not name secrets", got[1])
		}
	})
}

func TestDescribeBindings(t *testing.T) {
	alice := subject{Kind: "User", Name: "alice"}
	deployer := subject{Kind: "ServiceAccount", Name: "deployer", Namespace: "ci"}
	devs := subject{Kind: "Group", Name: "devs"}
	for _, tt := range []struct {
		name     string
		kind     string
		old, new map[string]any
		want     []string
	}{
		{"a ClusterRoleBinding created", "ClusterRoleBinding", nil, binding(t, "ClusterRoleBinding", "", "x", "ClusterRole", "cluster-admin", alice),
			[]string{"alice gains cluster-admin through ClusterRoleBinding x"}},
		{"the bootstrap cluster-admin binding deleted", "ClusterRoleBinding", load(t, "crb-cluster-admin.json"), nil,
			[]string{"group system:masters loses cluster-admin through ClusterRoleBinding cluster-admin"}},
		{"a binding gaining subjects", "RoleBinding",
			binding(t, "RoleBinding", "dev", "y", "Role", "editor", alice),
			binding(t, "RoleBinding", "dev", "y", "Role", "editor", alice, deployer, devs, subject{Kind: "ServiceAccount", Name: "builder"}),
			[]string{
				"ServiceAccount ci/deployer gains Role dev/editor in dev through RoleBinding dev/y",
				"ServiceAccount dev/builder gains Role dev/editor in dev through RoleBinding dev/y",
				"group devs gains Role dev/editor in dev through RoleBinding dev/y",
			}},
		{"a binding losing a subject", "RoleBinding",
			binding(t, "RoleBinding", "dev", "y", "ClusterRole", "edit", alice, devs),
			binding(t, "RoleBinding", "dev", "y", "ClusterRole", "edit", alice),
			[]string{"group devs loses ClusterRole edit in dev through RoleBinding dev/y"}},
		{"subjects reordered say nothing", "RoleBinding",
			binding(t, "RoleBinding", "dev", "y", "ClusterRole", "edit", alice, devs),
			binding(t, "RoleBinding", "dev", "y", "ClusterRole", "edit", devs, alice), nil},
		{"a roleRef changed across a gap", "RoleBinding",
			binding(t, "RoleBinding", "dev", "y", "ClusterRole", "view", alice),
			binding(t, "RoleBinding", "dev", "y", "ClusterRole", "admin", alice),
			[]string{"alice gains ClusterRole admin in dev through RoleBinding dev/y", "alice loses ClusterRole view in dev through RoleBinding dev/y"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Describe(tt.kind, tt.old, tt.new)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestDescribeSaysAtMostMaxSentences(t *testing.T) {
	var subjects []subject
	for i := range 25 {
		subjects = append(subjects, subject{Kind: "User", Name: fmt.Sprintf("user-%02d", i)})
	}
	got := Describe("ClusterRoleBinding", nil, binding(t, "ClusterRoleBinding", "", "many", "ClusterRole", "view", subjects...))
	if len(got) != MaxSentences+1 || got[MaxSentences] != "and 15 more" {
		t.Fatalf("got %d sentences, last %q; want %d and %q", len(got), got[len(got)-1], MaxSentences+1, "and 15 more")
	}
}

// A rule is a product of lists: a role asking for a million
// permissions is refused before they are read, and says so.
func TestDescribeRefusesAHugeRole(t *testing.T) {
	var many []string
	for i := range 1000 {
		many = append(many, fmt.Sprintf("r%d", i))
	}
	huge := role(t, "ClusterRole", "", "huge", rule{APIGroups: many, Resources: many, Verbs: []string{"get"}})
	got := Describe("ClusterRole", role(t, "ClusterRole", "", "huge"), huge)
	if want := []string{"ClusterRole huge's rules changed: too many permissions to compare"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDescribeOtherKindsSaysNothing(t *testing.T) {
	cm := decoded(t, map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "x"}, "rules": []rule{everything}})
	if got := Describe("ConfigMap", nil, cm); got != nil {
		t.Errorf("a ConfigMap got %q", got)
	}
	if Describes("", "Role") || Describes(Group, "ConfigMap") || !Describes(Group, "ClusterRoleBinding") {
		t.Error("Describes names the wrong kinds")
	}
}

func TestPermissionsChangedListsEachVerbGainedAndLost(t *testing.T) {
	old := role(t, "Role", "dev", "reader", rule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}})
	new := role(t, "Role", "dev", "reader",
		rule{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"get"}},
		rule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}})
	gained, lost, ok := PermissionsChanged(old, new)
	wantGained := []Permission{{Verb: "get", NonResourceURL: "/metrics"}, {Verb: "get", Resource: "secrets"}}
	wantLost := []Permission{{Verb: "list", Resource: "configmaps"}}
	if !ok || !slices.Equal(gained, wantGained) || !slices.Equal(lost, wantLost) {
		t.Errorf("gained %+v lost %+v ok %v, want gained %+v lost %+v", gained, lost, ok, wantGained, wantLost)
	}
	if gained, lost, ok := PermissionsChanged(new, new); !ok || gained != nil || lost != nil {
		t.Errorf("the same rules: gained %v lost %v", gained, lost)
	}
}

func TestSubjectsChangedNamesWhoIsBound(t *testing.T) {
	old := binding(t, "RoleBinding", "dev", "admins", "ClusterRole", "admin", subject{Kind: "User", Name: "alice"})
	new := binding(t, "RoleBinding", "dev", "admins", "ClusterRole", "admin",
		subject{Kind: "User", Name: "alice"}, subject{Kind: "ServiceAccount", Name: "ci"}, subject{Kind: "ServiceAccount", Name: "ci"})
	gained, lost := SubjectsChanged(old, new)
	if want := []Subject{{Kind: "ServiceAccount", Name: "ci", Namespace: "dev"}}; !slices.Equal(gained, want) || lost != nil {
		t.Errorf("gained %+v lost %+v, want gained %+v", gained, lost, want)
	}
	if gained, lost := SubjectsChanged(nil, new); len(gained) != 2 || len(lost) != 0 {
		t.Errorf("created: gained %+v lost %+v, want both subjects", gained, lost)
	}
	other := binding(t, "RoleBinding", "dev", "admins", "ClusterRole", "view", subject{Kind: "User", Name: "alice"})
	if gained, lost := SubjectsChanged(old, other); len(gained) != 1 || len(lost) != 1 {
		t.Errorf("another role across a gap: gained %+v lost %+v, want alice both", gained, lost)
	}
}
