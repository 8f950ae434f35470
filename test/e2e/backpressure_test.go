package e2e

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSlowReaderLosesNothing: `kubediff watch -o json | reader` where the
// reader looks away for 20 s while 5,000 updates go through, with a queue
// of 100: stdout is a Unix filter's output, so kubediff waits for its
// reader and every update comes out, in order per object.
func TestSlowReaderLosesNothing(t *testing.T) {
	ns := newNamespace(t)
	const objects, perObject = 100, 50
	cms := clients.CoreV1().ConfigMaps(ns)
	for i := range objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"n": "-1"}}
		if _, err := cms.Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w := startBinaryTo(t, pw, nil, "watch", "-n", ns, "-o", "json", "--queue-size", "100")
	pw.Close() // the child holds its own copy
	readerBack := time.Now().Add(20 * time.Second)
	go func() {
		time.Sleep(time.Until(readerBack)) // the slow reader
		_, _ = io.Copy(w.stdout, pr)
	}()

	// 5,000 updates, as fast as the API server takes them: 8 writers,
	// each owning some objects so that every object's values go in order.
	var wg sync.WaitGroup
	for writer := range 8 {
		wg.Go(func() {
			for n := range perObject {
				for i := writer; i < objects; i += 8 {
					patch := fmt.Sprintf(`{"data":{"n":"%d"}}`, n)
					if _, err := cms.Patch(bg, fmt.Sprintf("cm-%d", i), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	start := readerBack.Add(-20 * time.Second)
	wg.Wait()
	t.Logf("%d updates made in %s; the reader was away for the first 20 s", objects*perObject, time.Since(start).Round(100*time.Millisecond))

	next := map[string]int{} // per object, the value expected next
	var lost []string
	allSeen := func() bool {
		clear(next)
		lost = lost[:0]
		for _, c := range w.records() {
			if c.Type != "updated" {
				continue
			}
			got := fmt.Sprint(c.Changes[0].To)
			if want := fmt.Sprint(next[c.Name]); got != want {
				lost = append(lost, fmt.Sprintf("%s: %s after %d", c.Name, got, next[c.Name]-1))
			}
			next[c.Name]++
		}
		total := 0
		for _, n := range next {
			total += n
		}
		return total >= objects*perObject || len(lost) > 0
	}
	eventually(t, "every update on stdout", allSeen)
	if len(lost) > 0 {
		t.Fatalf("updates lost or out of order (%d), first: %s", len(lost), strings.Join(lost[:min(5, len(lost))], "; "))
	}
	if strings.Contains(w.stderr.String(), "dropping") {
		t.Fatalf("stdout dropped records:\n%s", w.stderr.String())
	}
}
