// Package audit reads the API server's audit events (audit.k8s.io/v1)
// into the writes they record: who sent each successful create, update,
// patch or delete, to which object, and the resourceVersion it produced.
// The audit webhook (pkg/identity/auditwebhook) and the audit log
// follower (pkg/identity/auditlog) share it.
//
// An event at the RequestResponse level carries the request and response
// bodies: a Secret's data, a TokenReview's token. The event type below
// has no field for a body, so the JSON decoder skips them without keeping
// a byte; of the response object only its metadata (and a deleted list's
// items' metadata) is read. k8s.io/apiserver's Event type is not used for
// that reason: it keeps both bodies whole (runtime.Unknown).
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/record"
)

// Version is the only audit API version read: the API server's default
// (--audit-webhook-version, --audit-log-version).
const Version = "audit.k8s.io/v1"

// Options says what of a request beyond its user a write carries
// (identity.userAgent, identity.sourceIP).
type Options struct {
	UserAgent bool
	SourceIP  bool
}

// event is the part of an audit.k8s.io/v1 Event kubediff reads.
type event struct {
	APIVersion       string          `json:"apiVersion"`
	AuditID          string          `json:"auditID"`
	Stage            string          `json:"stage"`
	RequestURI       string          `json:"requestURI"`
	Verb             string          `json:"verb"`
	User             userInfo        `json:"user"`
	ImpersonatedUser *userInfo       `json:"impersonatedUser"`
	SourceIPs        []string        `json:"sourceIPs"`
	UserAgent        string          `json:"userAgent"`
	ObjectRef        *objectRef      `json:"objectRef"`
	ResponseStatus   *responseStatus `json:"responseStatus"`
	ResponseObject   *responseObject `json:"responseObject"`
	RequestReceived  time.Time       `json:"requestReceivedTimestamp"`
	StageTimestamp   time.Time       `json:"stageTimestamp"`
}

type userInfo struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
}

type objectRef struct {
	Resource        string `json:"resource"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	UID             string `json:"uid"`
	APIGroup        string `json:"apiGroup"`
	ResourceVersion string `json:"resourceVersion"`
	Subresource     string `json:"subresource"`
}

type responseStatus struct {
	Code int `json:"code"`
}

// responseObject is what is read of the response body: the object's
// metadata (a Scale's is its parent's name, uid and resourceVersion), a
// Status's details (some deletes answer with one), a deleted list's
// items' metadata (deletecollection).
type responseObject struct {
	Kind     string     `json:"kind"`
	Metadata objectMeta `json:"metadata"`
	Details  *struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"details"`
	Items []struct {
		Metadata objectMeta `json:"metadata"`
	} `json:"items"`
}

type objectMeta struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
}

// writeVerbs are the verbs that change objects.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// storesNothing are creates that change no object the watch could see:
// reviews answered on the spot, token requests, and the streaming
// subresources (exec, attach, port-forward, proxy).
var storesNothing = map[string]bool{
	"tokenreviews": true, "subjectaccessreviews": true, "selfsubjectaccessreviews": true,
	"localsubjectaccessreviews": true, "selfsubjectrulesreviews": true, "selfsubjectreviews": true,
	"/token": true, "/exec": true, "/attach": true, "/portforward": true, "/proxy": true,
}

// changes reports whether the event records a write that changed an
// object: a completed, successful, non-dry-run create, update, patch or
// delete of a stored object.
func (ev *event) changes() bool {
	switch {
	case ev.Stage != "ResponseComplete", !writeVerbs[ev.Verb], ev.ObjectRef == nil:
		return false
	case ev.ResponseStatus == nil || ev.ResponseStatus.Code < 200 || ev.ResponseStatus.Code >= 300:
		return false
	case storesNothing[ev.ObjectRef.Resource] || storesNothing["/"+ev.ObjectRef.Subresource]:
		return false
	}
	return !dryRun(ev.RequestURI)
}

// dryRun reports whether the request asked for a dry run, which stores
// nothing. A URI that does not parse is taken as a dry run if it names
// the parameter at all: better a write unnamed than one wrongly named.
func dryRun(requestURI string) bool {
	u, err := url.ParseRequestURI(requestURI)
	if err != nil {
		return strings.Contains(requestURI, "dryRun")
	}
	_, asked := u.Query()["dryRun"]
	return asked
}

// writes returns the writes the event records, none when it changed no
// object. A deletecollection is one write per deleted object when the
// response lists them (RequestResponse level), else none: with no name
// it could not be tied to any object.
func (ev *event) writes(source string, o Options) []identity.Write {
	if !ev.changes() {
		return nil
	}
	w := identity.Write{
		Source: source, ID: ev.id(), Time: ev.StageTimestamp, User: ev.user(o), Verb: ev.Verb,
		Group: ev.ObjectRef.APIGroup, Resource: ev.ObjectRef.Resource, Subresource: ev.ObjectRef.Subresource,
		Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name, UID: ev.ObjectRef.UID,
	}
	if w.Time.IsZero() {
		w.Time = ev.RequestReceived
	}
	if ev.Verb == "update" {
		// An update's objectRef carries the request body's
		// resourceVersion: the precondition, the version it replaces.
		w.PreviousResourceVersion = ev.ObjectRef.ResourceVersion
	}
	resp := ev.ResponseObject
	if ev.Verb == "deletecollection" {
		return ev.deletedItems(w, resp)
	}
	if resp != nil {
		fillFrom(&w, resp.Metadata)
		if resp.Kind == "Status" && resp.Details != nil && w.UID == "" {
			w.UID = resp.Details.UID
		}
	}
	if w.ResourceVersion != "" && w.ResourceVersion == w.PreviousResourceVersion {
		return nil // an update that changed nothing: the server kept the version
	}
	if w.ResourceVersion == "" {
		// No response (Metadata level): whether the update changed
		// anything is unknown, and one that did not replaced the
		// version the next writer's write replaces. The version would
		// name this user for that write; the object and the time, with
		// every other write near it, name no one rather than guess.
		w.PreviousResourceVersion = ""
	}
	return []identity.Write{w}
}

// id tells this event from every other, for counting it once when the
// webhook and the log both deliver it or a batch is posted again. The
// audit ID alone would not: the API server takes it from the client's
// Audit-ID header when one is sent, so a client can reuse another
// request's and have that request's event dropped as a repeat. The
// times the server stamped (to the microsecond), the user and the object
// are added, and the whole hashed, so that an ID of any length costs
// the same few bytes to remember.
func (ev *event) id() string {
	h := sha256.New()
	for _, part := range []string{ev.AuditID, ev.RequestReceived.Format(time.RFC3339Nano), ev.StageTimestamp.Format(time.RFC3339Nano),
		ev.User.Username, ev.Verb, ev.ObjectRef.APIGroup, ev.ObjectRef.Resource, ev.ObjectRef.Subresource,
		ev.ObjectRef.Namespace, ev.ObjectRef.Name} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// fillFrom completes w from the response object's metadata: the name a
// generateName create got, the uid, the version the write produced.
func fillFrom(w *identity.Write, m objectMeta) {
	if w.Name == "" {
		w.Name = m.Name
	}
	if w.Namespace == "" {
		w.Namespace = m.Namespace
	}
	if m.UID != "" {
		w.UID = m.UID
	}
	w.ResourceVersion = m.ResourceVersion
}

// deletedItems is one write per object a deletecollection deleted.
func (ev *event) deletedItems(w identity.Write, resp *responseObject) []identity.Write {
	if resp == nil {
		return nil
	}
	out := make([]identity.Write, 0, len(resp.Items))
	for _, item := range resp.Items {
		one := w
		one.Verb, one.Name = "delete", ""
		fillFrom(&one, item.Metadata)
		// Each deletion is its own write: with the event's ID alone, the
		// first would be counted and the rest dropped as its repeats.
		one.ID = w.ID + "/" + one.UID + "/" + one.Name
		if one.Name != "" {
			out = append(out, one)
		}
	}
	return out
}

// user is who the write is attributed to: the impersonated user when the
// request impersonated one (the API server acted as them; the
// impersonator is not kept), else the authenticated user.
func (ev *event) user(o Options) record.User {
	u := ev.User
	if ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username != "" {
		u = *ev.ImpersonatedUser
	}
	out := identity.NewUser(u.Username, u.Groups)
	if o.UserAgent {
		out.UserAgent = ev.UserAgent
	}
	if o.SourceIP && len(ev.SourceIPs) > 0 {
		// The first is the client as the request names it
		// (X-Forwarded-For first), the rest the proxies on the way.
		out.SourceIP = ev.SourceIPs[0]
	}
	return out
}
