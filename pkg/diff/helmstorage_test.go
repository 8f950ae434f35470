package diff

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kubediff/kubediff/pkg/change"
)

// helmStorageJSON is one of Helm's records of release web's revision 2:
// a Secret of type typ, or a ConfigMap when typ is "".
func helmStorageJSON(kind, typ, status string) string {
	typeField := ""
	if typ != "" {
		typeField = fmt.Sprintf(`,"type":%q`, typ)
	}
	return fmt.Sprintf(`{"apiVersion":"v1","kind":%q%s,"metadata":{"name":"sh.helm.release.v1.web.v2","namespace":"ns","uid":"u-2","resourceVersion":"3",
 "labels":{"owner":"helm","name":"web","version":"2","status":%q}},"data":{"release":"H4sI"}}`, kind, typeField, status)
}

// The quiet default helmStorage hides Helm's own records of its
// releases, added, updated (quiet, so the history keeps the state) and
// deleted, whether in Secrets or ConfigMaps; a Secret merely named and
// labelled like one, but not of Helm's type, still shows; and with the
// rule off (--show-helm-storage) every one shows.
func TestHelmStorageIsQuietByDefault(t *testing.T) {
	on, err := New(Options{Rules: Rules{Defaults: AllDefaults}, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	off, err := New(Options{Rules: Rules{Defaults: slices.DeleteFunc(slices.Clone(AllDefaults), func(n string) bool { return n == "helmStorage" })}, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		resource change.Resource
		kind     string
		typ      string
		hidden   bool
	}{
		{"a release Secret", secrets, "Secret", "helm.sh/release.v1", true},
		{"a release ConfigMap (HELM_DRIVER=configmap)", configMaps, "ConfigMap", "", true},
		{"an Opaque Secret named as Helm names its records", secrets, "Secret", "Opaque", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deployed, superseded := obj(t, helmStorageJSON(tt.kind, tt.typ, "deployed")), obj(t, helmStorageJSON(tt.kind, tt.typ, "superseded"))
			events := []change.Event{
				{Type: change.Added, Resource: tt.resource, New: deployed},
				{Type: change.Updated, Resource: tt.resource, Old: deployed, New: superseded},
				{Type: change.Deleted, Resource: tt.resource, Old: superseded},
			}
			for _, ev := range events {
				c, reported := on.Diff(ev)
				if reported == tt.hidden {
					t.Errorf("%s: reported %v, want %v", ev.Type, reported, !tt.hidden)
				}
				if tt.hidden && ev.Type == change.Updated && !Quiet(c) {
					t.Errorf("a hidden update is not quiet: the history would not keep the object's state")
				}
				if _, shown := off.Diff(ev); !shown {
					t.Errorf("%s with helmStorage off: not reported", ev.Type)
				}
			}
		})
	}
}

// Helm's release storage, written under client-go's default field
// manager (Helm), names the same tool as the objects it applies (helm).
func TestHelmHasOneName(t *testing.T) {
	d, err := New(Options{Rules: Rules{Defaults: slices.DeleteFunc(slices.Clone(AllDefaults), func(n string) bool { return n == "helmStorage" })}, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	for _, manager := range []string{"Helm", "helm"} {
		o := obj(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","type":"helm.sh/release.v1","metadata":{"name":"sh.helm.release.v1.web.v1","namespace":"ns",
 "labels":{"owner":"helm"},"managedFields":[{"manager":%q,"operation":"Update","time":"2026-11-22T10:04:05Z"}]}}`, manager))
		c, ok := d.Diff(change.Event{Type: change.Added, Resource: secrets, New: o})
		if !ok || c.Manager == nil || c.Manager.Name != "helm" {
			t.Errorf("written by field manager %s: the record names %+v, want helm", manager, c.Manager)
		}
	}
}
