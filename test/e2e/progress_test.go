package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// While a type is still listing, the sync progress counts its objects as
// they come and, once asked, says how many the server has: what the
// "syncing caches" lines print, with the time left.
func TestSyncProgressCountsObjectsAndExpectsTheServersCount(t *testing.T) {
	ns := newNamespace(t)
	const n = 1500
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": strings.Repeat("x", 2000)}}
				if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const want = n // no controller manager here: no kube-root-ca.crt
	target := discovery.Target{Namespace: ns, Resource: discovery.Resource{
		GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true,
	}}
	// The list may be done before it is counted; a fresh watcher lists
	// again.
	for range 5 {
		ctx, cancel := context.WithCancel(bg)
		w, err := watcher.New(env.Config, func(watcher.Event) {}, watcher.Options{Compress: true})
		if err != nil {
			t.Fatal(err)
		}
		w.Sync(ctx, []discovery.Target{target})
		w.CountUnsynced(ctx)
		during := w.Progress()
		eventually(t, "the sync", func() bool { return w.Progress().Synced == 1 })
		after := w.Progress()
		cancel()
		w.Wait()
		if after.Objects != want || after.Expected != want {
			t.Fatalf("synced: %d objects, %d expected; want %d", after.Objects, after.Expected, want)
		}
		if during.Synced == 0 {
			if during.Expected != want || during.Objects > want {
				t.Fatalf("while syncing: %d objects so far, %d expected; want %d expected", during.Objects, during.Expected, want)
			}
			return
		}
	}
	t.Fatal("the list was done before it was counted, five times")
}
