// Package historyapi serves kubediff's history over HTTP (documented in
// docs/history.md) to each caller as their Kubernetes RBAC allows, and
// reads it back for the CLI's --server: one query layer (Source) for the
// state dir and a running kubediff.
package historyapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/blame"
	"github.com/kubediff/kubediff/pkg/history/restore"
)

// Source answers history queries: a state dir (Local) or a running
// kubediff (Remote).
type Source interface {
	Records(ctx context.Context, q history.Query) (history.Page, error)
	At(ctx context.Context, id change.ObjectID, t time.Time) ([]byte, error)
	Resolve(ctx context.Context, name string) ([]discovery.Resource, error)
	// Blame says which kept change last changed each line of the
	// object's YAML at t (as watch shows it; every field kept with all).
	Blame(ctx context.Context, id change.ObjectID, t time.Time, all bool) (blame.Blame, error)
	// Restore makes the object's state at t a manifest for server-side
	// apply, or says why it cannot (restore.ErrIncomplete).
	Restore(ctx context.Context, id change.ObjectID, t time.Time) (restore.Manifest, error)
}

// Local is a Source reading a history directly. Rules are the diff rules
// it was kept under, which say what its states lack (nil: the built-in
// ones).
type Local struct {
	Reader Store
	Rules  *diff.Differ
}

// Records implements Source.
func (l Local) Records(_ context.Context, q history.Query) (history.Page, error) {
	return l.Reader.Records(q)
}

// At implements Source: the kept state, through the current redaction
// rules.
func (l Local) At(_ context.Context, id change.ObjectID, t time.Time) ([]byte, error) {
	return keptAt(l.Reader, id, t)
}

// Resolve implements Source.
func (l Local) Resolve(_ context.Context, name string) ([]discovery.Resource, error) {
	return l.Reader.Resolve(name)
}

// Blame implements Source.
func (l Local) Blame(_ context.Context, id change.ObjectID, t time.Time, all bool) (blame.Blame, error) {
	return blameOf(l.Reader, id, t, all)
}

// Restore implements Source.
func (l Local) Restore(ctx context.Context, id change.ObjectID, t time.Time) (restore.Manifest, error) {
	return restoreFrom(ctx, l, l.Rules, id, t)
}

// Paths of the API.
const (
	BasePath    = "/api/v1/history"
	RecordsPath = BasePath + "/records"
	ObjectPath  = BasePath + "/object"
	TypesPath   = BasePath + "/types"
	DiffPath    = BasePath + "/diff"
	BlamePath   = BasePath + "/blame"
	RestorePath = BasePath + "/restore"
)

// Handler serves the API.
type Handler struct {
	reader Store
	access *Access
	turns  turns
	rules  *diff.Differ
}

// NewHandler serves reader's history to callers access lets in. A nil
// access lets everyone see everything: only for `kubediff ui` on a state
// dir, whose reader could open the file anyway, behind its own key.
func NewHandler(reader Store, access *Access) *Handler {
	return &Handler{reader: reader, access: access, turns: newTurns(queryTurns)}
}

// SetRules names the diff rules the history is kept under, which say
// what its states lack (restore refuses a field they prune); without,
// the built-in ones.
func (h *Handler) SetRules(d *diff.Differ) { h.rules = d }

// Register adds the API's routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+RecordsPath, h.authenticated(h.records))
	mux.HandleFunc("GET "+ObjectPath, h.authenticated(h.object))
	mux.HandleFunc("GET "+TypesPath, h.authenticated(h.types))
	mux.HandleFunc("GET "+DiffPath, h.authenticated(h.diff))
	mux.HandleFunc("GET "+BlamePath, h.authenticated(h.blame))
	mux.HandleFunc("GET "+RestorePath, h.authenticated(h.restore))
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, user *authnv1.UserInfo)

// authenticated lets through only callers the API server knows.
func (h *Handler) authenticated(next handlerFunc) http.HandlerFunc {
	return h.access.Require(next)
}

// Require lets through to next only callers the API server knows (401
// otherwise). A nil Access lets everyone through (NewHandler).
func (a *Access) Require(next func(w http.ResponseWriter, r *http.Request, user *authnv1.UserInfo)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a == nil {
			next(w, r, &authnv1.UserInfo{Username: "state-dir reader"})
			return
		}
		user, err := a.Authenticate(r)
		switch {
		case errors.Is(err, errUnauthenticated):
			w.Header().Set("WWW-Authenticate", `Bearer realm="kubediff"`)
			writeError(w, http.StatusUnauthorized, "Unauthorized", err)
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, "Unavailable", err)
		default:
			next(w, r, user)
		}
	}
}

// WriteJSON answers v as JSON.
func WriteJSON(w http.ResponseWriter, v any) { writeJSON(w, v) }

func (h *Handler) records(w http.ResponseWriter, r *http.Request, user *authnv1.UserInfo) {
	q, err := parseQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err)
		return
	}
	// Access is decided before the history is read: no review runs
	// inside its read transaction, where a slow one would hold up the
	// state's flush.
	if q, err = visibleQuery(r.Context(), h.reader, h.access, user, q); err != nil {
		writeQueryError(w, err)
		return
	}
	body, err := h.turns.inTurn(r.Context(), func() ([]byte, error) {
		page, err := h.reader.Records(q)
		if err != nil {
			return nil, err
		}
		return encodePage(page)
	})
	if err != nil {
		writeQueryError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}

// encodePage writes a page as json.Marshal would, but copies each
// record's JSON as the history keeps it (compact, as kubediff encoded
// it) where json.Marshal would check and compact it again: that was 40%
// of a records query's CPU.
func encodePage(page history.Page) ([]byte, error) {
	size := 64
	for _, r := range page.Records {
		size += len(r) + 1
	}
	out := append(make([]byte, 0, size), `{"records":[`...)
	for i, r := range page.Records {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	out = append(out, ']')
	rest, err := json.Marshal(struct {
		Next  string     `json:"next,omitempty"`
		Begin *time.Time `json:"begin,omitempty"`
	}{page.Next, page.Begin})
	if err != nil {
		return nil, err
	}
	if len(rest) > 2 { // more than {}
		out = append(append(out, ','), rest[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// writeQueryError answers why a query has no answer: the caller's
// mistake (400), a review the API server did not answer (503: leaving
// records out would pass for "not allowed"), or the history (500).
func writeQueryError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrTooBroad), errors.Is(err, errBadNamespace), errors.Is(err, history.ErrBadPageToken):
		writeError(w, http.StatusBadRequest, "BadRequest", err)
	case errors.Is(err, errReviewFailed), errors.Is(err, errNoTurn):
		writeError(w, http.StatusServiceUnavailable, "Unavailable", err)
	default:
		writeError(w, http.StatusInternalServerError, "Internal", err)
	}
}

func (h *Handler) object(w http.ResponseWriter, r *http.Request, user *authnv1.UserInfo) {
	_, id, at, ok := h.allowedObjectAt(w, r, user, true)
	if !ok {
		return
	}
	raw, err := h.turns.inTurn(r.Context(), func() ([]byte, error) { return keptAt(h.reader, id, at) })
	if err != nil {
		writeStateError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(raw)
}

// diff answers how an object changed between from and to (default: now),
// as a unified diff of YAML, through watch's rules unless all=true.
func (h *Handler) diff(w http.ResponseWriter, r *http.Request, user *authnv1.UserInfo) {
	v, id, ok := h.allowedObject(w, r, user)
	if !ok {
		return
	}
	from, err := time.Parse(time.RFC3339Nano, v.Get("from"))
	to := time.Now()
	if err == nil && v.Get("to") != "" {
		to, err = time.Parse(time.RFC3339Nano, v.Get("to"))
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", errors.New("from, to: want RFC 3339 times"))
		return
	}
	view := WatchView()
	if v.Get("all") == "true" {
		view = nil // every field kept, managedFields included
	}
	text, err := h.turns.inTurn(r.Context(), func() ([]byte, error) {
		text, err := UnifiedDiff(r.Context(), Local{Reader: h.reader}, id, v.Get("object"), from, to, view)
		return []byte(text), err
	})
	if err != nil {
		writeStateError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(text)
}

// blame answers which kept change last changed each line of the object
// at at (default: now), as JSON, through watch's rules unless all=true.
func (h *Handler) blame(w http.ResponseWriter, r *http.Request, user *authnv1.UserInfo) {
	v, id, at, ok := h.allowedObjectAt(w, r, user, false)
	if !ok {
		return
	}
	body, err := h.turns.inTurn(r.Context(), func() ([]byte, error) {
		b, err := blameOf(h.reader, id, at, v.Get("all") == "true")
		if err != nil {
			return nil, err
		}
		return json.Marshal(b)
	})
	if err != nil {
		writeStateError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}

// restore answers the object's state at at as a manifest for
// server-side apply: JSON ({"manifest", "warnings"}), or YAML with the
// warnings as comments (format=yaml, the page's download); 409 when the
// kept state is incomplete.
func (h *Handler) restore(w http.ResponseWriter, r *http.Request, user *authnv1.UserInfo) {
	v, id, at, ok := h.allowedObjectAt(w, r, user, true)
	if !ok {
		return
	}
	m, err := restoreFrom(r.Context(), h.SourceFor(user), h.rules, id, at)
	if err != nil {
		writeStateError(w, err)
		return
	}
	if v.Get("format") != "yaml" {
		writeJSON(w, m)
		return
	}
	body, err := ManifestYAML(m)
	if err != nil {
		writeStateError(w, err)
		return
	}
	_, _, _, name := id.Parts()
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Content-Disposition", `attachment; filename="`+safeFileName(name)+`.restore.yaml"`)
	_, _ = w.Write(body)
}

// safeFileName keeps a file name to what a header may carry.
func safeFileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, name)
}

// allowedObjectAt is allowedObject and the moment at (RFC 3339; when
// not required, now by default).
func (h *Handler) allowedObjectAt(w http.ResponseWriter, r *http.Request, user *authnv1.UserInfo, required bool) (url.Values, change.ObjectID, time.Time, bool) {
	v, id, ok := h.allowedObject(w, r, user)
	if !ok {
		return nil, "", time.Time{}, false
	}
	if v.Get("at") == "" && !required {
		return v, id, time.Now(), true
	}
	at, err := time.Parse(time.RFC3339Nano, v.Get("at"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", errors.New("at: want an RFC 3339 time"))
		return nil, "", at, false
	}
	return v, id, at, true
}

// allowedObject reads the query and the object it names (object,
// namespace), and answers 400 or 403 unless the caller may list it.
func (h *Handler) allowedObject(w http.ResponseWriter, r *http.Request, user *authnv1.UserInfo) (url.Values, change.ObjectID, bool) {
	v, err := queryOf(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err)
		return nil, "", false
	}
	sel, err := ParseSelector(v.Get("object"))
	if err == nil && sel.Name == "" {
		err = errors.New("object: want RESOURCE[.GROUP]/NAME, such as deployments.apps/web")
	}
	ns := v.Get("namespace")
	if err == nil {
		err = checkNamespace(ns)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err)
		return nil, "", false
	}
	ok, err := h.access.MayList(r.Context(), user, sel.Group, sel.Resource, ns)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "Unavailable", err)
		return nil, "", false
	}
	if !ok {
		writeError(w, http.StatusForbidden, "Forbidden", errors.New("your Kubernetes RBAC does not let you list "+sel.Resource+" there"))
		return nil, "", false
	}
	return v, change.NewObjectID(sel.Group, sel.Resource, ns, sel.Name), true
}

// writeStateError answers why there is no state.
func writeStateError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, history.ErrNotFound):
		writeError(w, http.StatusNotFound, "NotFound", err)
	case errors.Is(err, history.ErrBeforeHistory):
		writeError(w, http.StatusNotFound, "BeforeHistory", err)
	case errors.Is(err, ErrDiffTooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "TooLarge", err)
	case errors.Is(err, restore.ErrIncomplete):
		writeError(w, http.StatusConflict, "Incomplete", err)
	case errors.Is(err, errNoTurn):
		writeError(w, http.StatusServiceUnavailable, "Unavailable", err)
	default:
		writeError(w, http.StatusInternalServerError, "Internal", err)
	}
}

func (h *Handler) types(w http.ResponseWriter, r *http.Request, _ *authnv1.UserInfo) {
	v, err := queryOf(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err)
		return
	}
	found, err := h.reader.Resolve(v.Get("name"))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Internal", err)
		return
	}
	out := make([]history.TypeNames, 0, len(found))
	for _, t := range found {
		out = append(out, history.NamesOf(t))
	}
	writeJSON(w, map[string]any{"types": out})
}

// parseQuery reads a records query: select (repeatable), namespace,
// user, rule, severity, events, release, drift, from, until, limit,
// after.
func parseQuery(r *http.Request) (history.Query, error) {
	v, err := queryOf(r)
	if err != nil {
		return history.Query{}, err
	}
	q := history.Query{Namespace: v.Get("namespace"), After: v.Get("after"), User: v.Get("user"), Rule: v.Get("rule"), Severity: v.Get("severity"),
		Events: v.Get("events"), Release: v.Get("release")}
	if err := checkNamespace(q.Namespace); err != nil {
		return q, err
	}
	if err := checkUser(q.User); err != nil {
		return q, err
	}
	if err := CheckRuleFilter(q.Rule, q.Severity); err != nil {
		return q, err
	}
	if err := CheckEvents(q.Events); err != nil {
		return q, err
	}
	if err := CheckReleaseFilter(q.Release); err != nil {
		return q, err
	}
	if q.Drift, err = boolParam(v.Get("drift"), "drift"); err != nil {
		return q, err
	}
	if q.After != "" {
		if _, err := history.ParsePageToken(q.After); err != nil {
			return q, fmt.Errorf("after: %w", err)
		}
	}
	for _, s := range v["select"] {
		sel, err := ParseSelector(s)
		if err != nil {
			return q, err
		}
		q.Select = append(q.Select, sel)
	}
	for _, t := range []struct {
		name string
		into *time.Time
	}{{"from", &q.From}, {"until", &q.Until}} {
		if s := v.Get(t.name); s != "" {
			parsed, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return q, errors.New(t.name + ": want an RFC 3339 time")
			}
			*t.into = parsed
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return q, errors.New("limit: want 1 to " + strconv.Itoa(MaxLimit))
		}
		q.Limit = n
	}
	return q, nil
}

// MaxLimit is the most records one page holds.
const MaxLimit = 5000

// ParseSelector reads RESOURCE[.GROUP][/NAME] ("deployments.apps/web").
func ParseSelector(s string) (history.Selector, error) {
	typ, name, _ := strings.Cut(s, "/")
	resource, group, _ := strings.Cut(typ, ".")
	if resource == "" || strings.Contains(name, "/") {
		return history.Selector{}, errors.New("select: want RESOURCE[.GROUP][/NAME], such as deployments.apps/web")
	}
	sel := history.Selector{Group: group, Resource: resource, Name: name}
	return sel, checkSelector(sel)
}

// FormatSelector writes a selector as ParseSelector reads it.
func FormatSelector(s history.Selector) string {
	out := s.Resource
	if s.Group != "" {
		out += "." + s.Group
	}
	if s.Name != "" {
		out += "/" + s.Name
	}
	return out
}

// apiError is the body of every error.
type apiError struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

func writeError(w http.ResponseWriter, status int, reason string, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiError{Error: err.Error(), Reason: reason})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
