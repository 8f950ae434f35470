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
