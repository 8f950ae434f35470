package record

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestByNamesTheUserAndTheManager(t *testing.T) {
	alice := &User{Name: "alice", Groups: []string{"dev"}}
	deployer := &User{Name: "system:serviceaccount:shop:deployer", ServiceAccount: &ServiceAccount{Namespace: "shop", Name: "deployer"}}
	scale := &Manager{Name: "kubectl", Subresource: "scale"}
	for _, tc := range []struct {
		user    *User
		manager *Manager
		want    string
	}{
		{alice, scale, "alice (kubectl)"},
		{deployer, &Manager{Name: "helm"}, "ServiceAccount shop/deployer (helm)"},
		{alice, nil, "alice"},
		{nil, scale, "kubectl"},
		{nil, nil, ""},
	} {
		if got := (Change{User: tc.user, Manager: tc.manager}).By(); got != tc.want {
			t.Errorf("By() = %q, want %q", got, tc.want)
		}
	}
}

// A CloudEvent (webhook and Kafka with format: cloudevents) carries the
// user in its data, as every JSON record does.
func TestCloudEventCarriesTheUser(t *testing.T) {
	c := Change{ID: "u/1/updated", Type: Updated, Kind: "Deployment", Namespace: "shop", Name: "web",
		User: &User{Name: "alice", Groups: []string{"dev", "system:authenticated"}}}
	b, err := json.Marshal(NewCloudEvent(c, "kubediff"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"user":{"name":"alice","groups":["dev","system:authenticated"]}`; !strings.Contains(string(b), want) {
		t.Errorf("event %s lacks %s", b, want)
	}
}

func TestNamedIsExact(t *testing.T) {
	deployer := &User{Name: "system:serviceaccount:shop:deployer", ServiceAccount: &ServiceAccount{Namespace: "shop", Name: "deployer"}}
	for _, tc := range []struct {
		user *User
		name string
		want bool
	}{
		{&User{Name: "alice"}, "alice", true},
		{&User{Name: "alice"}, "ali", false},
		{&User{Name: "alice"}, "", false},
		{deployer, "system:serviceaccount:shop:deployer", true},
		{deployer, "ServiceAccount shop/deployer", true},
		{deployer, "deployer", false},
		{&User{Name: "ServiceAccount shop/deployer"}, "ServiceAccount shop/deployer", true},
		{nil, "alice", false},
	} {
		if got := tc.user.Named(tc.name); got != tc.want {
			t.Errorf("%+v.Named(%q) = %v, want %v", tc.user, tc.name, got, tc.want)
		}
	}
}

func TestByNamesTheRelease(t *testing.T) {
	helm := &Release{Tool: ToolHelm, Name: "web", Namespace: "shop", Revision: 7, Chart: "web-1.4.2"}
	app := &Release{Tool: ToolArgoCD, Kind: "Application", Namespace: "argocd", Name: "shop", GitRevision: "4f1c2a9d0e1b2c3d4e5f60718293a4b5c6d7e8f9", Status: "Running"}
	flux := &Release{Tool: ToolFlux, Kind: "Kustomization", Namespace: "flux-system", Name: "apps", GitRevision: "main@sha1:4f1c2a9d0e1b2c3d4e5f60718293a4b5c6d7e8f9"}
	for _, tc := range []struct {
		c    Change
		want string
	}{
		{Change{Manager: &Manager{Name: "helm"}, Release: helm}, "helm (release web rev 7, chart web-1.4.2)"},
		{Change{User: &User{Name: "alice"}, Manager: &Manager{Name: "helm"}, Release: helm}, "alice (helm, release web rev 7, chart web-1.4.2)"},
		{Change{Release: &Release{Tool: ToolHelm, Name: "web"}}, "release web"},
		{Change{Manager: &Manager{Name: "argocd-controller"}, Release: app}, "argocd-controller (Application argocd/shop, revision 4f1c2a9d0e1b (Running))"},
		{Change{Manager: &Manager{Name: "kustomize-controller"}, Release: flux}, "kustomize-controller (Kustomization flux-system/apps, revision main@sha1:4f1c2a9d0e1b)"},
	} {
		if got := tc.c.By(); got != tc.want {
			t.Errorf("By() = %q, want %q", got, tc.want)
		}
	}
	for name, want := range map[string]bool{"web": true, "shop/web": true, "other/web": false, "we": false, "": false} {
		if got := helm.Named(name); got != want {
			t.Errorf("Named(%q) = %v, want %v", name, got, want)
		}
	}
	if (*Release)(nil).Named("web") {
		t.Error("no release names web")
	}
}
