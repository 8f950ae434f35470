// Package admission is the admission observer: a validating admission
// webhook that always allows and notes who sent each write, for clusters
// whose audit backend cannot be configured (EKS, GKE, AKS). The API server
// calls it with failurePolicy Ignore and a short timeout (the registration
// in deploy/components/admission-observer and the chart), so an observer
// that is down, slow or wrong never refuses or holds up a write: at worst
// a write goes unnoted and its record says no user.
//
// Of each AdmissionReview only the user and the keys of the join are kept
// (operation, resource, namespace, name, uid, the old object's
// resourceVersion): the objects themselves, a Secret's data included, are
// decoded for their metadata and dropped, never logged.
package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/callerauth"
)

// Path is where the observer takes AdmissionReviews; the registration's
// clientConfig names it.
const Path = "/observe"

// Source is the identity.Write source the observer notes writes as.
const Source = "admission"

// MaxReviewBytes bounds an AdmissionReview's body. The API server takes
// request bodies of up to 3 MiB, and a review of an update carries the
// object twice; a bigger body is refused (the API server then lets the
// write through unnoted, as with any webhook failure).
const MaxReviewBytes = 8 << 20

// Handler serves AdmissionReviews on Path (or Path/TOKEN): it answers
// allowed to every one and hands each write an authenticated caller
// describes to a Noter.
type Handler struct {
	notes identity.Noter
	auth  *callerauth.Checker
	log   *slog.Logger
	now   func() time.Time

	mu         sync.Mutex
	seen       bool      // a review came: the registration reaches us
	broken     bool      // the last body could not be read as a review
	strangerAt time.Time // the last post from an unauthenticated caller
}

// strangersQuiet is how long without an unauthenticated post before the
// next one is logged again: a scanner or an attacker retrying gets one
// line, not one per post.
const strangersQuiet = 5 * time.Minute

// NewHandler returns a Handler noting into notes the writes of reviews
// whose caller auth authenticates.
func NewHandler(notes identity.Noter, auth *callerauth.Checker, log *slog.Logger) *Handler {
	return &Handler{notes: notes, auth: auth, log: log, now: time.Now}
}

// ServeHTTP answers one AdmissionReview.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pathToken, underPath := strings.CutPrefix(r.URL.Path, Path+"/")
	switch {
	case r.URL.Path != Path && !underPath:
		http.NotFound(w, r)
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST an admission.k8s.io/v1 AdmissionReview", http.StatusMethodNotAllowed)
		return
	case !h.auth.Authenticated(r) && !h.auth.IsToken(pathToken):
		// Refused before the body is read: a stranger's post costs no
		// more than its headers. The API server, had it sent this,
		// lets the write through (failurePolicy Ignore).
		h.stranger()
		http.Error(w, "unauthenticated: only the API server may post reviews here", http.StatusUnauthorized)
		return
	}
	req, status, err := readReview(w, r)
	if err != nil {
		h.refused(err)
		http.Error(w, err.Error(), status)
		return
	}
	h.accepted()
	if write, ok := writeOf(req, h.now()); ok {
		h.notes.Note(write)
	}
	respond(w, req.UID)
}

// readReview reads the request of an admission.k8s.io/v1 AdmissionReview
// from r's body. Its errors are sentences of its own: a decoder's error
// may quote a piece of the body, which can be a Secret's.
func readReview(w http.ResponseWriter, r *http.Request) (*admissionv1.AdmissionRequest, int, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxReviewBytes))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("an AdmissionReview over %d MiB", MaxReviewBytes>>20)
		}
		return nil, http.StatusBadRequest, errors.New("the AdmissionReview's body could not be read")
	}
	var review admissionv1.AdmissionReview
	if json.Unmarshal(body, &review) != nil {
		return nil, http.StatusBadRequest, errors.New("a body that is not an AdmissionReview in JSON")
	}
	switch {
	case review.APIVersion != admissionv1.SchemeGroupVersion.String() || review.Kind != "AdmissionReview":
		// What was posted is not repeated: the log says only what it is not.
		return nil, http.StatusBadRequest, errors.New("not an admission.k8s.io/v1 AdmissionReview (the registration's admissionReviewVersions must be [v1])")
	case review.Request == nil || review.Request.UID == "":
		return nil, http.StatusBadRequest, errors.New("an AdmissionReview with no request or no request uid")
	}
	return review.Request, 0, nil
}

// respond allows the request uid names.
func respond(w http.ResponseWriter, uid types.UID) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: &admissionv1.AdmissionResponse{UID: uid, Allowed: true},
	})
}

// objectMeta is all the observer reads of an object.
type objectMeta struct {
	Metadata struct {
		Name            string `json:"name"`
		UID             string `json:"uid"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// metaOf reads an object's name, uid and resourceVersion; an object that
// is absent or not JSON has none.
func metaOf(obj runtime.RawExtension) objectMeta {
	var m objectMeta
	if len(obj.Raw) > 0 {
		_ = json.Unmarshal(obj.Raw, &m)
	}
	return m
}

// writeOf is the write req describes, false for what is not one (a
// CONNECT, a dry run).
func writeOf(req *admissionv1.AdmissionRequest, now time.Time) (identity.Write, bool) {
	if req.DryRun != nil && *req.DryRun {
		return identity.Write{}, false // never happens: nothing to attribute
	}
	if neverReviewed(req.Resource.Group, req.Resource.Resource) {
		return identity.Write{}, false
	}
	w := identity.Write{
		Source:      Source,
		ID:          string(req.UID),
		Time:        now,
		User:        identity.NewUser(req.UserInfo.Username, req.UserInfo.Groups),
		Verb:        strings.ToLower(string(req.Operation)),
		Group:       req.Resource.Group,
		Resource:    req.Resource.Resource,
		Subresource: req.SubResource,
		Namespace:   req.Namespace,
		Name:        req.Name,
	}
	switch req.Operation {
	case admissionv1.Create:
		// The registry sets a new object's uid (and a generated name)
		// before validating admission. A subresource's object (an
		// Eviction, a Binding) is not the object written: only its
		// parent's name, from the request, says which that is.
		if req.SubResource == "" {
			m := metaOf(req.Object)
			w.Name, w.UID = m.Metadata.Name, m.Metadata.UID
		}
	case admissionv1.Update, admissionv1.Delete:
		// The old object is the one stored: its version is the one this
		// write replaces (a Scale carries its parent's uid and version).
		m := metaOf(req.OldObject)
		w.UID, w.PreviousResourceVersion = m.Metadata.UID, m.Metadata.ResourceVersion
	default:
		return identity.Write{}, false
	}
	return w, true
}

// neverReviewed reports the writes the API server never sends to
// admission webhooks (so that a webhook cannot lock the cluster out of
// fixing its own registration): a review of one was not sent by it.
func neverReviewed(group, resource string) bool {
	if group != "admissionregistration.k8s.io" {
		return false
	}
	switch resource {
	case "validatingwebhookconfigurations", "mutatingwebhookconfigurations",
		"validatingadmissionpolicies", "validatingadmissionpolicybindings",
		"mutatingadmissionpolicies", "mutatingadmissionpolicybindings":
		return true
	}
	return false
}

// stranger logs the first of a run of unauthenticated posts; the rest of
// the run, until strangersQuiet passes without one, goes to debug.
func (h *Handler) stranger() {
	now := h.now()
	h.mu.Lock()
	first := h.strangerAt.IsZero() || now.Sub(h.strangerAt) > strangersQuiet
	h.strangerAt = now
	h.mu.Unlock()
	level := slog.LevelDebug
	if first {
		level = slog.LevelWarn
	}
	h.log.Log(context.Background(), level, "admission observer: refused a post from a caller that is not the API server (no client certificate the client CA signed, no token); it names no one")
}

// accepted notes a review read well: the first says the registration
// reaches kubediff, one after bad bodies that they stopped.
func (h *Handler) accepted() {
	h.mu.Lock()
	first, healed := !h.seen, h.broken
	h.seen, h.broken = true, false
	h.mu.Unlock()
	switch {
	case first:
		h.log.Info("admission observer: the API server's reviews arrive")
	case healed:
		h.log.Info("admission observer: AdmissionReviews read again")
	}
}

// refused logs the first of a run of bodies that are not reviews; the
// rest of the run goes to debug.
func (h *Handler) refused(err error) {
	h.mu.Lock()
	first := !h.broken
	h.broken = true
	h.mu.Unlock()
	level := slog.LevelDebug
	if first {
		level = slog.LevelWarn
	}
	h.log.Log(context.Background(), level, "admission observer: refused a post; the API server lets such writes through unnoted", "reason", err.Error())
}
