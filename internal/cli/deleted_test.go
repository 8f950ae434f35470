package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
)

// stateDirWithADeletion makes a history in which ConfigMap shop/web was
// created two minutes ago and deleted by alice a minute ago, and returns
// it with the deletion's time.
func stateDirWithADeletion(t *testing.T) (string, time.Time) {
	t.Helper()
	dir := t.TempDir()
	store, err := state.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetHistory(history.Policy{Retention: time.Hour, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	cms := discovery.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, ShortNames: []string{"cm"}}
	if err := store.KeepTypes([]discovery.Resource{cms}); err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "u-web", "resourceVersion": "10"}, "data": map[string]any{"k": "v"}}}
	now := time.Now().Truncate(time.Millisecond)
	deletedAt := now.Add(-time.Minute)
	for _, step := range []struct {
		typ      string
		at       time.Time
		old, new *unstructured.Unstructured
		user     *record.User
	}{
		{record.Added, now.Add(-2 * time.Minute), nil, cm, nil},
		{record.Deleted, deletedAt, cm, nil, &record.User{Name: "alice"}},
	} {
		c := record.Change{Time: record.Timestamp(step.at), Type: step.typ, APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps",
			Namespace: "shop", Name: "web", UID: "u-web", ResourceVersion: "10", User: step.user}
		c.ID = c.StableID()
		store.Keep(journal.Entry{Change: c, Resource: cms, Old: step.old, New: step.new})
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, deletedAt
}

// Asked about a deleted object after its deletion, get and restore say
// when it was deleted, by whom, and the moment its last state is at,
// with the command that asks for it; that command prints it.
func TestADeletedObjectSaysWhenItWasDeleted(t *testing.T) {
	dir, deletedAt := stateDirWithADeletion(t)
	before := stamp(deletedAt.Add(-time.Millisecond))
	for _, name := range []string{"get", "restore"} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), []string{name, "cm", "web", "-n", "shop", "--at", "now", "--state-dir", dir}, &stdout, &stderr)
		want := "it was deleted at " + stamp(deletedAt) + " by alice; its last state is at " + before + " (kubediff " + name + " cm/web --at " + before + ")"
		if code != exitError || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s after the deletion: exit %d, stderr %q; want exit 1 saying %q", name, code, stderr.String(), want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"get", "cm/web", "-n", "shop", "--at", before, "--state-dir", dir}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "k: v") {
		t.Errorf("get at the moment it names: exit %d, %s%s", code, stdout.String(), stderr.String())
	}
}
