package restore

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

const keptDeployment = `{"apiVersion":"apps/v1","kind":"Deployment",
	"metadata":{"name":"web","namespace":"shop","uid":"u1","resourceVersion":"41","generation":3,"creationTimestamp":"2026-11-23T13:00:00Z",
		"managedFields":[{"manager":"kubectl","operation":"Update"}],"labels":{"app":"web"},
		"ownerReferences":[{"apiVersion":"example.io/v1","kind":"App","name":"gone","uid":"g1"},{"apiVersion":"example.io/v1","kind":"App","name":"here","uid":"h1"}]},
	"spec":{"replicas":3},"status":{"replicas":3}}`

func TestPrepareLeavesOutWhatTheServerSets(t *testing.T) {
	exists := func(ref map[string]any) (bool, error) { return ref["name"] == "here", nil }
	m, err := Prepare(decode(t, keptDeployment), Options{Group: "apps", Resource: "deployments", OwnerExists: exists,
		Ignored: []string{"/metadata/managedFields", "/metadata/resourceVersion", "/metadata/generation",
			"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration", "/metadata/annotations/deployment.kubernetes.io~1revision",
			"/status/conditions/*/lastUpdateTime"}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(m.Object)
	want := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"web"},"name":"web","namespace":"shop",` +
		`"ownerReferences":[{"apiVersion":"example.io/v1","kind":"App","name":"here","uid":"h1"}]},"spec":{"replicas":3}}`
	if string(got) != want {
		t.Errorf("manifest:\n%s\nwant\n%s", got, want)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "App gone left out") {
		t.Errorf("warnings: %q", m.Warnings)
	}
}

func TestPrepareRefusesAnIncompleteState(t *testing.T) {
	for _, tc := range []struct {
		name, state, resource string
		ignored               []string
		reason                string
	}{
		{"a Secret", `{"kind":"Secret","metadata":{"name":"db"},"data":{"password":"*** redacted 01234567 ***"}}`, "secrets", nil, "Secret's values are redacted"},
		{"a redacted env var", `{"kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DB_PASSWORD","value":"*** redacted 89abcdef ***"}]}]}}}}`,
			"deployments", nil, "spec.template.spec.containers[0].env[0].value holds a value kubediff redacted"},
		{"a field the user's rules prune", `{"kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"1"}}`, "configmaps", []string{"/data/generated"}, "prune /data/generated"},
		{"a Lease's renewTime", `{"kind":"Lease","metadata":{"name":"x"},"spec":{}}`, "leases", []string{"/spec/renewTime"}, "prune /spec/renewTime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Prepare(decode(t, tc.state), Options{Resource: tc.resource, Ignored: tc.ignored})
			if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("Prepare: %v, want a refusal saying %q", err, tc.reason)
			}
		})
	}
}

func TestPrepareLetsTheServerAllocateAServicesAddress(t *testing.T) {
	m, err := Prepare(decode(t, `{"kind":"Service","metadata":{"name":"web"},"spec":{"clusterIP":"10.0.0.7","clusterIPs":["10.0.0.7"],"ports":[{"port":80}]}}`),
		Options{Resource: "services"})
	if err != nil {
		t.Fatal(err)
	}
	if spec := m.Object["spec"].(map[string]any); spec["clusterIP"] != nil || spec["clusterIPs"] != nil || spec["ports"] == nil {
		t.Errorf("spec: %v", spec)
	}
}

// A Job's selector the API server made from its uid is left for it to
// make again; one its author wrote (manualSelector) stays.
func TestPrepareLetsTheServerGenerateAJobsSelector(t *testing.T) {
	const job = `{"kind":"Job","metadata":{"name":"m","labels":{"controller-uid":"u1","team":"a"}},"spec":{%s"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"u1"}},` +
		`"template":{"metadata":{"labels":{"batch.kubernetes.io/controller-uid":"u1","controller-uid":"u1","job-name":"m"}}}}}`
	m, err := Prepare(decode(t, fmt.Sprintf(job, "")), Options{Group: "batch", Resource: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(m.Object); strings.Contains(got, "u1") || !strings.Contains(got, "job-name:m") || !strings.Contains(got, "team:a") {
		t.Errorf("generated selector: %s", got)
	}
	m, err = Prepare(decode(t, fmt.Sprintf(job, `"manualSelector":true,`)), Options{Group: "batch", Resource: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(m.Object); strings.Count(got, "u1") != 4 {
		t.Errorf("a manual selector was changed: %s", got)
	}
}

// A Pod goes to the scheduler again, with its priority computed again
// from its class; what the author wrote stays.
func TestPrepareLetsAPodBePlacedAgain(t *testing.T) {
	m, err := Prepare(decode(t, `{"kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"node-gone","priority":1000,"priorityClassName":"high","preemptionPolicy":"Never","overhead":{"cpu":"250m"},`+
		`"ephemeralContainers":[{"name":"debugger","image":"busybox"}],"nodeSelector":{"zone":"a"},"containers":[{"name":"app","image":"nginx"}]}}`),
		Options{Resource: "pods"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(m.Object["spec"])
	if want := `{"containers":[{"image":"nginx","name":"app"}],"nodeSelector":{"zone":"a"},"priorityClassName":"high"}`; string(got) != want {
		t.Errorf("spec:\n%s\nwant\n%s", got, want)
	}
}
