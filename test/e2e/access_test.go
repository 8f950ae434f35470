package e2e

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kubediff/kubediff/internal/cli"
)

// accessReviews reads how many SelfSubjectAccessReviews the API server has
// answered, from its own metrics.
func accessReviews(t *testing.T) int {
	t.Helper()
	raw, err := clients.RESTClient().Get().AbsPath("/metrics").DoRaw(bg)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	re := regexp.MustCompile(`(?m)^apiserver_request_total\{[^}]*resource="selfsubjectaccessreviews"[^}]*\} (\d+)`)
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	return total
}

// TestAccessIsCheckedOncePerGrantNotPerType: `kubediff resources` as a
// cluster admin, who may list and watch everything, asks the API server
// two access reviews in all, not two per type (556 for 278 types took
// 9 s); every type is still reported watched.
func TestAccessIsCheckedOncePerGrantNotPerType(t *testing.T) {
	before := accessReviews(t)
	var stdout, stderr bytes.Buffer
	if code := cli.Run(context.Background(), []string{"resources", "--kubeconfig", env.Kubeconfig}, &stdout, &stderr); code != 0 {
		t.Fatalf("kubediff resources exited %d: %s", code, stderr.String())
	}
	reviews := accessReviews(t) - before
	watched := strings.Count(stdout.String(), " watched")
	t.Logf("%d types watched, %d access reviews", watched, reviews)
	if watched < 40 || strings.Contains(stdout.String(), "forbidden") {
		t.Fatalf("a cluster admin should watch every type:\n%s", stdout.String())
	}
	if reviews > 2 {
		t.Errorf("%d access reviews for %d types: want the two for everything", reviews, watched)
	}
}
