package e2e

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubediff/kubediff/pkg/record"
)

// historyGet asks kubediff's history API with a bearer token.
func historyGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: deadline}).Do(req)
	if err != nil {
		t.Fatalf("GET %.200s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHistoryAPIBoundsAgainstTheAPIServer: a ServiceAccount's token,
// checked by TokenReview and reviewed by SubjectAccessReview against real
// RBAC, gets 400 for what the API cannot bound or read (a page token that
// is not one, a namespace no object can be in, 10,001 parameters, which Go
// reads as none: the answer was the unfiltered one), and pages whose
// tokens never tell the time of a record in a namespace it may not see.
func TestHistoryAPIBoundsAgainstTheAPIServer(t *testing.T) {
	ns, elsewhere := newNamespace(t), newNamespace(t)
	viewer := tokenOf(t, tokenKubeconfig(t, ns, "viewer", ns))
	w := startWatch(t, "-n", ns, "-n", elsewhere, "--resources", "configmaps", "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.logOnFailure()
	// Mine, theirs, mine: the viewer's first page of one ends before
	// theirs.
	createConfigMap(t, ns, "first")
	w.waitRecords("ConfigMap", ns, "first", 1)
	createConfigMap(t, elsewhere, "hidden")
	hidden := w.waitRecords("ConfigMap", elsewhere, "hidden", 1)[0]
	createConfigMap(t, ns, "second")
	w.waitRecords("ConfigMap", ns, "second", 1)

	records := httpAddress(t, w) + "/api/v1/history/records"
	eventually(t, "the viewer's two records in the history", func() bool {
		code, body := historyGet(t, records+"?namespace="+ns, viewer)
		return code == 200 && strings.Count(body, `"name":"second"`) == 1
	})
	var pages int
	for after := ""; ; pages++ {
		code, body := historyGet(t, records+"?limit=1"+after, viewer)
		var page struct {
			Records []record.Change `json:"records"`
			Next    string          `json:"next"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &page) != nil {
			t.Fatalf("page %d: %d %s", pages, code, body)
		}
		for _, c := range page.Records {
			if c.Namespace != ns {
				t.Errorf("the viewer was shown %s/%s", c.Namespace, c.Name)
			}
		}
		if page.Next == "" {
			break
		}
		if k, err := hex.DecodeString(page.Next); err == nil && len(k) == 16 {
			at := time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])))
			if at.Equal(time.Time(hidden.Time)) {
				t.Errorf("page %d's token tells the time of %s/hidden (%s), which the viewer may not see", pages, elsewhere, at.UTC())
			}
		}
		after = "&after=" + page.Next
	}
	if pages != 1 {
		t.Errorf("%d page tokens for the viewer's 2 records in pages of one, want 1", pages)
	}

	onlySecrets := "namespace=" + ns + "&select=secrets" + strings.Repeat("&x=1", 10000)
	for name, query := range map[string]string{
		"a page token that is not one":      "after=garbage",
		"a namespace of 100,000 characters": "namespace=" + strings.Repeat("n", 100000),
		"10,001 parameters":                 onlySecrets,
	} {
		if code, body := historyGet(t, records+"?"+query, viewer); code != http.StatusBadRequest {
			t.Errorf("%s: %d %.300s; want 400", name, code, body)
		}
	}
}

// TestHistoryDecisionsAreWholeIdentities: through the API server (client
// certificates, the front proxy's headers, kubediff's SubjectAccessReviews
// against real RBAC), a user in the one group "g1,g2" is not taken for the
// same user in the groups g1 and g2, whose decisions were cached a moment
// before under the same key (groups joined by ",").
func TestHistoryDecisionsAreWholeIdentities(t *testing.T) {
	ns := newNamespace(t)
	createConfigMap(t, ns, "settings")
	w := startWatch(t, "--resources", "configmaps", "-n", ns, "--state-dir", t.TempDir(), "--api-service-address", "127.0.0.1:0")
	w.logOnFailure()
	m := regexp.MustCompile(`aggregated API \S+ address=127\.0\.0\.1:(\d+)`).FindStringSubmatch(w.stderr.String())
	if m == nil {
		t.Fatalf("no aggregated API address logged")
	}
	port, _ := strconv.Atoi(m[1])
	registerAPIService(t, ns, port)
	setConfigMap(t, ns, "settings", "1")
	w.waitRecords("ConfigMap", ns, "settings", 1)

	user, g1, g2 := "carol-"+ns, "g1-"+ns, "g2-"+ns
	twoGroups, err := env.AddUser(user, g1, g2)
	if err != nil {
		t.Fatal(err)
	}
	// AddUser writes the same path for the same name: keep the first.
	kept := filepath.Join(t.TempDir(), "two-groups")
	if raw, err := os.ReadFile(twoGroups); err != nil || os.WriteFile(kept, raw, 0o600) != nil {
		t.Fatal(err)
	}
	oneGroup, err := env.AddUser(user, g1+","+g2)
	if err != nil {
		t.Fatal(err)
	}
	grantHistoryAccess(t, ns, user, rbacv1.Subject{Kind: "Group", Name: g1, APIGroup: "rbac.authorization.k8s.io"})

	history := func(kubeconfig string) (string, int) {
		return cliOutput(t, "history", "--kubeconfig", kubeconfig, "--via-apiserver", "-A", "configmaps", "-o", "json")
	}
	eventually(t, "the member of "+g1+" to see "+ns, func() bool {
		out, code := history(kept)
		return code == 0 && strings.Contains(out, `"namespace":"`+ns+`"`)
	})
	if out, code := history(oneGroup); code != 0 || strings.Contains(out, ns) {
		t.Errorf("the member of the one group %q sees %s (exit %d):\n%s", g1+","+g2, ns, code, out)
	}
}
