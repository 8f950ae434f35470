package changegen

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Each update is one record of the change it makes: one line of a
// ConfigMap's 1.7 KB file, a Deployment's replicas or image.
func TestUpdatesMakeOneChangeEach(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		new   func(int) (*Stream, error)
		field string
	}{
		{"configmap", NewConfigMaps, `data["app.conf"]`},
		{"deployment", NewDeployments, "spec."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.new(3)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 6 {
				u, err := s.Next(at.Add(time.Duration(i) * time.Second))
				if err != nil {
					t.Fatal(err)
				}
				c := u.Entry.Change
				if len(c.Changes) != 1 || !strings.HasPrefix(c.Changes[0].Field, tc.field) || !time.Time(c.Time).Equal(at.Add(time.Duration(i)*time.Second)) {
					t.Fatalf("update %d: %+v", i, c)
				}
				if u.Key != u.Entry.New.GetNamespace()+"/"+u.Entry.New.GetName() || len(u.Raw) == 0 {
					t.Fatalf("update %d: key %q, %d bytes", i, u.Key, len(u.Raw))
				}
			}
		})
	}
	s, _ := NewConfigMaps(1)
	file, _, _ := unstructured.NestedString(s.objects[0].Object, "data", "app.conf")
	if len(file) < 1600 || len(file) > 1800 {
		t.Errorf("config file of %d bytes, want about 1.7 KB", len(file))
	}
}
