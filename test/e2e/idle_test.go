package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestLeaderReportsNothingOfItsOwn: with leader election on, as the chart
// and deploy/base run kubediff, the leader publishes its delivery progress
// in a Lease it watches. After one change and two markers, each past a
// publication of progress, the records are exactly those three: kubediff
// reports none of its own Leases (it used to report the progress Lease
// every 16 s, forever).
func TestLeaderReportsNothingOfItsOwn(t *testing.T) {
	ns := newNamespace(t)
	cms := clients.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}, Data: map[string]string{"k": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := startBinary(t, "watch", "-n", ns, "--leader-elect", "--leader-election-namespace", ns)
	eventually(t, "kubediff to lead", func() bool { return strings.Contains(w.stderr.String(), "leading: emitting records") })
	progress := func() uint64 {
		lease, err := clients.CoordinationV1().Leases(ns).Get(bg, "kubediff-progress", metav1.GetOptions{})
		if err != nil {
			return 0
		}
		v, _ := strconv.ParseUint(lease.Annotations["kubediff.io/delivered-through"], 10, 64)
		return v
	}
	// pastPublication makes a change and waits until the leader has
	// published progress past it: the Lease changed after the record.
	pastPublication := func(change func() string, name string) {
		t.Helper()
		rv, _ := strconv.ParseUint(change(), 10, 64)
		w.waitRecords("ConfigMap", ns, name, 1)
		eventually(t, fmt.Sprintf("progress past %s (%d)", name, rv), func() bool { return progress() >= rv })
	}
	pastPublication(func() string {
		cm, err := cms.Patch(bg, "watched", types.MergePatchType, []byte(`{"data":{"k":"1"}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.ResourceVersion
	}, "watched")
	for _, marker := range []string{"marker-1", "marker-2"} {
		pastPublication(func() string {
			cm, err := cms.Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: marker}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return cm.ResourceVersion
		}, marker)
	}
	var got []string
	for _, c := range w.records() {
		got = append(got, c.Type+" "+c.Kind+" "+c.Name)
	}
	want := []string{"updated ConfigMap watched", "added ConfigMap marker-1", "added ConfigMap marker-2"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n  %s\nwant only the cluster's own changes:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
