package audit

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/record"
)

var at = time.Date(2026, 11, 25, 9, 0, 0, 123456000, time.UTC)

// auditEvent is an audit.k8s.io/v1 Event as the API server writes it,
// changed by edit.
func auditEvent(edit func(ev map[string]any)) map[string]any {
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
		"auditID": "6a2b1c1e-0000-4000-8000-000000000001", "stage": "ResponseComplete",
		"requestURI": "/apis/apps/v1/namespaces/shop/deployments/web/scale?fieldManager=kubectl-scale",
		"verb":       "patch",
		"user":       map[string]any{"username": "alice", "uid": "a-1", "groups": []any{"devs", "system:authenticated"}},
		"sourceIPs":  []any{"10.0.0.7", "127.0.0.1"},
		"userAgent":  "kubectl/v1.37.0 (linux/amd64)",
		"objectRef": map[string]any{"resource": "deployments", "namespace": "shop", "name": "web",
			"apiGroup": "apps", "apiVersion": "v1", "subresource": "scale"},
		"responseStatus": map[string]any{"metadata": map[string]any{}, "code": 200},
		"requestObject":  map[string]any{"spec": map[string]any{"replicas": 5}},
		"responseObject": map[string]any{"kind": "Scale", "apiVersion": "autoscaling/v1",
			"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "u-web", "resourceVersion": "1042", "creationTimestamp": "2026-11-25T08:00:00Z"},
			"spec":     map[string]any{"replicas": 5}, "status": map[string]any{"replicas": 2, "selector": "app=web"}},
		"requestReceivedTimestamp": "2026-11-25T09:00:00.100000Z",
		"stageTimestamp":           at.Format(time.RFC3339Nano),
	}
	if edit != nil {
		edit(ev)
	}
	return ev
}

func line(t *testing.T, ev map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t *testing.T, ev map[string]any, o Options) []identity.Write {
	t.Helper()
	writes, err := ParseLine(line(t, ev), "audit-log", o)
	if err != nil {
		t.Fatal(err)
	}
	return writes
}

func alice() record.User {
	return record.User{Name: "alice", Groups: []string{"devs", "system:authenticated"}}
}

// The repeated kubectl scale, which the managedFields cannot attribute:
// the Scale the API server answered holds the Deployment's uid and the
// resourceVersion the write produced.
func TestScaleNamesTheDeploymentAndTheVersionItProduced(t *testing.T) {
	got := parse(t, auditEvent(nil), Options{})
	want := []identity.Write{{Source: "audit-log", Time: at, User: alice(), Verb: "patch",
		Group: "apps", Resource: "deployments", Subresource: "scale", Namespace: "shop", Name: "web", UID: "u-web", ResourceVersion: "1042"}}
	if len(got) == 1 && len(got[0].ID) == 32 {
		got[0].ID = "" // TestAClientsAuditIDHidesNoWrite checks it
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func refOf(ev map[string]any) map[string]any { return ev["objectRef"].(map[string]any) }

func TestWritesOfEachKindOfEvent(t *testing.T) {
	deployment := map[string]any{"kind": "Deployment", "apiVersion": "apps/v1",
		"metadata": map[string]any{"name": "web-x7k2p", "generateName": "web-", "namespace": "shop", "uid": "u-new", "resourceVersion": "2001"}}
	for _, tc := range []struct {
		name  string
		edit  func(ev map[string]any)
		check func(t *testing.T, w []identity.Write)
	}{
		{"a create named by generateName takes its name from the response", func(ev map[string]any) {
			ev["verb"], ev["responseObject"] = "create", deployment
			delete(refOf(ev), "name")
			delete(refOf(ev), "subresource")
			ev["responseStatus"] = map[string]any{"code": 201}
		}, func(t *testing.T, w []identity.Write) {
			one(t, w, "create", "web-x7k2p", "u-new", "2001")
		}},
		{"an update names the version it replaced", func(ev map[string]any) {
			ev["verb"], ev["responseObject"] = "update", deployment
			refOf(ev)["resourceVersion"] = "1999"
		}, func(t *testing.T, w []identity.Write) {
			one(t, w, "update", "web", "u-new", "2001")
			if w[0].PreviousResourceVersion != "1999" {
				t.Errorf("previous version %q, want 1999", w[0].PreviousResourceVersion)
			}
		}},
		{"an update that changed nothing is no write", func(ev map[string]any) {
			ev["verb"], ev["responseObject"] = "update", deployment
			refOf(ev)["resourceVersion"] = "2001"
		}, none},
		{"a delete answered with a Status takes the uid from its details", func(ev map[string]any) {
			ev["verb"] = "delete"
			delete(refOf(ev), "subresource")
			ev["responseObject"] = map[string]any{"kind": "Status", "status": "Success", "details": map[string]any{"name": "web", "kind": "deployments", "uid": "u-web"}}
		}, func(t *testing.T, w []identity.Write) { one(t, w, "delete", "web", "u-web", "") }},
		{"a deletecollection is a delete of each object it deleted", func(ev map[string]any) {
			ev["verb"] = "deletecollection"
			delete(refOf(ev), "name")
			ev["responseObject"] = map[string]any{"kind": "DeploymentList", "items": []any{
				map[string]any{"metadata": map[string]any{"name": "a", "namespace": "shop", "uid": "u-a", "resourceVersion": "7"}},
				map[string]any{"metadata": map[string]any{"name": "b", "namespace": "shop", "uid": "u-b", "resourceVersion": "8"}}}}
		}, func(t *testing.T, w []identity.Write) {
			if len(w) != 2 || w[0].Verb != "delete" || w[0].Name != "a" || w[1].UID != "u-b" || w[1].ResourceVersion != "8" {
				t.Fatalf("got %+v", w)
			}
			// Each is its own write: noted together, each deletion is named.
			book := identity.NewBook()
			for _, one := range w {
				book.Note(one)
			}
			for _, uid := range []string{"u-a", "u-b"} {
				q := identity.Query{Group: "apps", Resource: "deployments", Namespace: "shop", UID: uid, Type: record.Deleted, Hops: []identity.Hop{{From: "5"}}, Time: at}
				if u, answer := book.Who(q); answer != identity.Known || u.Name != "alice" {
					t.Errorf("the deletion of %s: %q, %v; want alice", uid, u.Name, answer)
				}
			}
		}},
		{"a deletecollection logged without its response names nothing", func(ev map[string]any) {
			ev["verb"], ev["level"] = "deletecollection", "Metadata"
			delete(refOf(ev), "name")
			delete(ev, "responseObject")
		}, none},
		{"a write logged at Metadata level has no version", func(ev map[string]any) {
			ev["level"], ev["verb"] = "Metadata", "create"
			delete(ev, "requestObject")
			delete(ev, "responseObject")
			refOf(ev)["resource"], refOf(ev)["name"] = "secrets", "db"
		}, func(t *testing.T, w []identity.Write) { one(t, w, "create", "db", "", "") }},
		{"a failed write is no write", func(ev map[string]any) {
			ev["responseStatus"] = map[string]any{"code": 409, "reason": "Conflict"}
		}, none},
		{"a dry run is no write", func(ev map[string]any) {
			ev["requestURI"] = "/apis/apps/v1/namespaces/shop/deployments/web/scale?dryRun=All&fieldManager=kubectl"
		}, none},
		{"a stage before the response is no write", func(ev map[string]any) { ev["stage"] = "RequestReceived" }, none},
		{"a read is no write", func(ev map[string]any) { ev["verb"] = "get" }, none},
		{"a token request changes no object", func(ev map[string]any) {
			ev["verb"] = "create"
			refOf(ev)["resource"], refOf(ev)["subresource"], refOf(ev)["apiGroup"] = "serviceaccounts", "token", ""
		}, none},
		{"a TokenReview changes no object", func(ev map[string]any) {
			ev["verb"] = "create"
			ev["objectRef"] = map[string]any{"resource": "tokenreviews", "apiGroup": "authentication.k8s.io"}
		}, none},
		{"a custom resource whose top-level items is no list still names its write", func(ev map[string]any) {
			ev["responseObject"] = map[string]any{"kind": "Widget", "items": "three", "details": 4,
				"metadata": map[string]any{"name": "web", "uid": "u-w", "resourceVersion": "55"}}
		}, func(t *testing.T, w []identity.Write) { one(t, w, "patch", "web", "u-w", "55") }},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, parse(t, auditEvent(tc.edit), Options{})) })
	}
}

func one(t *testing.T, w []identity.Write, verb, name, uid, rv string) {
	t.Helper()
	if len(w) != 1 {
		t.Fatalf("%d writes, want 1: %+v", len(w), w)
	}
	if w[0].Verb != verb || w[0].Name != name || w[0].UID != uid || w[0].ResourceVersion != rv {
		t.Fatalf("got verb %q name %q uid %q resourceVersion %q, want %q %q %q %q", w[0].Verb, w[0].Name, w[0].UID, w[0].ResourceVersion, verb, name, uid, rv)
	}
}

func none(t *testing.T, w []identity.Write) {
	t.Helper()
	if len(w) != 0 {
		t.Fatalf("want no write, got %+v", w)
	}
}

func TestUser(t *testing.T) {
	t.Run("the impersonated user, not the impersonator", func(t *testing.T) {
		w := parse(t, auditEvent(func(ev map[string]any) {
			ev["impersonatedUser"] = map[string]any{"username": "bob", "groups": []any{"ops"}}
		}), Options{})
		if got := w[0].User; got.Name != "bob" || !reflect.DeepEqual(got.Groups, []string{"ops"}) {
			t.Fatalf("user %+v, want bob of ops", got)
		}
	})
	t.Run("a ServiceAccount by namespace and name", func(t *testing.T) {
		w := parse(t, auditEvent(func(ev map[string]any) {
			ev["user"] = map[string]any{"username": "system:serviceaccount:ci:deployer", "groups": []any{"system:serviceaccounts"}}
		}), Options{})
		if sa := w[0].User.ServiceAccount; sa == nil || sa.Namespace != "ci" || sa.Name != "deployer" {
			t.Fatalf("service account %+v, want ci/deployer", sa)
		}
	})
	t.Run("user agent and source address only when asked", func(t *testing.T) {
		if u := parse(t, auditEvent(nil), Options{})[0].User; u.UserAgent != "" || u.SourceIP != "" {
			t.Fatalf("not asked, got %+v", u)
		}
		u := parse(t, auditEvent(nil), Options{UserAgent: true, SourceIP: true})[0].User
		if u.UserAgent != "kubectl/v1.37.0 (linux/amd64)" || u.SourceIP != "10.0.0.7" {
			t.Fatalf("asked, got %+v", u)
		}
	})
}

// A Secret's write at RequestResponse level (a policy that forgot the
// Metadata rule) carries its data in both bodies: the write names who
// and which object, nothing of the data.
func TestNothingOfABodyReachesTheWrite(t *testing.T) {
	const value = "hunter2-do-not-leak"
	ev := auditEvent(func(ev map[string]any) {
		ev["verb"] = "create"
		ev["objectRef"] = map[string]any{"resource": "secrets", "namespace": "shop", "name": "db", "apiVersion": "v1"}
		secret := map[string]any{"kind": "Secret", "apiVersion": "v1", "stringData": map[string]any{"password": value},
			"metadata": map[string]any{"name": "db", "namespace": "shop", "uid": "u-s", "resourceVersion": "9",
				"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": value}}}
		ev["requestObject"], ev["responseObject"] = secret, secret
	})
	w := parse(t, ev, Options{UserAgent: true, SourceIP: true})
	one(t, w, "create", "db", "u-s", "9")
	if s := fmt.Sprintf("%#v", w); strings.Contains(s, value) {
		t.Fatalf("the write holds the secret: %s", s)
	}
}

func TestUndecodableInputNamesNoContent(t *testing.T) {
	const value = "hunter2-do-not-leak"
	for _, in := range []string{`{"apiVersion":"audit.k8s.io/v1","verb":` + value, `"` + value + `"`, `{"apiVersion":"` + value + `"}`} {
		_, err := ParseLine([]byte(in), "audit-log", Options{})
		if err == nil || strings.Contains(err.Error(), value) {
			t.Errorf("ParseLine(%s): error %v, want one without the content", in, err)
		}
		_, err = DecodeList(strings.NewReader(in), "audit-webhook", Options{})
		if err == nil || strings.Contains(err.Error(), value) {
			t.Errorf("DecodeList(%s): error %v, want one without the content", in, err)
		}
	}
}

func TestDecodeList(t *testing.T) {
	second := auditEvent(func(ev map[string]any) {
		ev["auditID"] = "id-2"
		ev["responseObject"].(map[string]any)["metadata"].(map[string]any)["resourceVersion"] = "1043"
	})
	list := map[string]any{"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": map[string]any{},
		"items": []any{auditEvent(nil), auditEvent(func(ev map[string]any) { ev["verb"] = "get" }), second}}
	writes, err := DecodeList(strings.NewReader(string(line(t, list))), "audit-webhook", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 2 || writes[0].ResourceVersion != "1042" || writes[1].ResourceVersion != "1043" || writes[0].ID == writes[1].ID || writes[1].Source != "audit-webhook" {
		t.Fatalf("got %+v", writes)
	}
	list["apiVersion"] = "audit.k8s.io/v1beta1"
	if _, err := DecodeList(strings.NewReader(string(line(t, list))), "audit-webhook", Options{}); err == nil || !strings.Contains(err.Error(), "audit.k8s.io/v1beta1") {
		t.Fatalf("another version: error %v, want one naming it", err)
	}
}

// The audit ID is the client's when it sends an Audit-ID header: a write
// that reuses another's ID is still its own write (it is told apart by
// what the API server stamped), the same event from the webhook and the
// log is one, and an ID of 900 KB is remembered in 32 bytes.
func TestAClientsAuditIDHidesNoWrite(t *testing.T) {
	first := parse(t, auditEvent(nil), Options{})
	again, err := DecodeList(strings.NewReader(string(line(t, map[string]any{"apiVersion": "audit.k8s.io/v1", "items": []any{auditEvent(nil)}}))), "audit-webhook", Options{})
	if err != nil || len(again) != 1 || again[0].ID != first[0].ID {
		t.Fatalf("the same event from the log and the webhook: ids %v and %v (%v), want one", first, again, err)
	}
	reused := parse(t, auditEvent(func(ev map[string]any) {
		ev["user"] = map[string]any{"username": "bob"}
		ev["stageTimestamp"] = at.Add(3 * time.Second).Format(time.RFC3339Nano)
		ev["requestReceivedTimestamp"] = at.Add(3 * time.Second).Format(time.RFC3339Nano)
	}), Options{})
	if len(reused) != 1 || reused[0].ID == first[0].ID {
		t.Fatalf("bob's write reusing alice's Audit-ID has her write's id %v: it would be dropped as a repeat", reused)
	}
	huge := parse(t, auditEvent(func(ev map[string]any) { ev["auditID"] = strings.Repeat("x", 900<<10) }), Options{})
	if len(huge) != 1 || len(huge[0].ID) != 32 {
		t.Fatalf("a 900 KB audit ID: %d writes, id of %d bytes; want one of 32", len(huge), len(huge[0].ID))
	}
}

// At Metadata level (a Secret) an update has no response: whether it
// changed anything is unknown, and one that did not (alice putting the
// Secret back as it was) replaced the version bob's next write replaces.
// It must not name alice for bob's write: both writes are near the
// record, so no one is named.
func TestAnUpdateWithoutResponseClaimsNoVersion(t *testing.T) {
	secretWrite := func(user, verb string, at time.Time) map[string]any {
		return auditEvent(func(ev map[string]any) {
			ev["level"], ev["verb"], ev["user"] = "Metadata", verb, map[string]any{"username": user}
			ev["auditID"] = user + "-" + verb
			ev["objectRef"] = map[string]any{"resource": "secrets", "namespace": "shop", "name": "db", "apiVersion": "v1", "uid": "s1", "resourceVersion": "337"}
			delete(ev, "requestObject")
			delete(ev, "responseObject")
			ev["stageTimestamp"] = at.Format(time.RFC3339Nano)
		})
	}
	noop := parse(t, secretWrite("alice", "update", at), Options{})
	if len(noop) != 1 || noop[0].PreviousResourceVersion != "" {
		t.Fatalf("alice's update at Metadata level: %+v; want a write with no version it replaced", noop)
	}
	book := identity.NewBook()
	book.Note(noop[0])
	book.Note(parse(t, secretWrite("bob", "patch", at.Add(time.Second)), Options{})[0])
	q := identity.Query{Resource: "secrets", Namespace: "shop", Name: "db", UID: "s1", Type: record.Updated,
		Hops: []identity.Hop{{From: "337", To: "338"}}, Time: at.Add(1100 * time.Millisecond)}
	if u, answer := book.Who(q); answer == identity.Known {
		t.Fatalf("bob's change after alice's no-op update is credited to %q; want no one", u.Name)
	}
}
