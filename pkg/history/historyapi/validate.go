package historyapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubediff/kubediff/pkg/glob"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/record"
)

// maxParameters is the most query parameters a request may send: far
// more than any query needs (select repeats once a type), and far below
// the 10,000 past which Go's url package reads none at all, which would
// turn a filtered request into an unfiltered one.
const maxParameters = 100

// queryOf reads a request's query parameters, refusing more than
// maxParameters or any it cannot read: a parameter silently dropped
// would widen the answer.
func queryOf(r *http.Request) (url.Values, error) {
	if n := strings.Count(r.URL.RawQuery, "&") + 1; r.URL.RawQuery != "" && n > maxParameters {
		return nil, fmt.Errorf("%d query parameters: at most %d are read", n, maxParameters)
	}
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("the query cannot be read: %w", err)
	}
	return v, nil
}

// errBadNamespace marks a namespace no Kubernetes object can be in.
var errBadNamespace = errors.New("namespace: want a namespace's name (a DNS-1123 label: at most 63 lowercase letters, digits and '-')")

// checkNamespace refuses a namespace that cannot exist ("" is every
// namespace): such a name would only cost access reviews and cache.
func checkNamespace(ns string) error {
	if ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
		return errBadNamespace
	}
	return nil
}

// maxUserName bounds a user name a query may send: longer than any the
// API server's authenticators give (an OIDC issuer URL and subject), far
// shorter than a query's limit.
const maxUserName = 1024

// checkUser refuses a user name no request could have been made by: too
// long, or holding a control character ("" is every user).
func checkUser(name string) error {
	if len(name) > maxUserName || strings.ContainsFunc(name, unicode.IsControl) || !utf8.ValidString(name) {
		return fmt.Errorf("user: want a user's name as the API server authenticated it (alice, system:serviceaccount:NAMESPACE:NAME), at most %d bytes of text", maxUserName)
	}
	return nil
}

// maxRuleName bounds a rule name or glob a query may send: rules are
// named in a config file, and no name needs more.
const maxRuleName = 253

// CheckRuleFilter refuses a rule pattern no rule can have (too long, a
// control character, a glob that is not one) and a severity that is none
// ("" is every rule, every severity): the history API's rule and
// severity, and the MCP tools'.
func CheckRuleFilter(rule, severity string) error {
	if len(rule) > maxRuleName || strings.ContainsFunc(rule, unicode.IsControl) || !utf8.ValidString(rule) || glob.Valid([]string{rule}) != nil {
		return fmt.Errorf("rule: want a rule's name or a glob (image-changed, rbac-*), at most %d bytes of text", maxRuleName)
	}
	if record.SeverityRank(severity) < 0 {
		return fmt.Errorf("severity: want one of %s (at least)", strings.Join(record.Severities, ", "))
	}
	return nil
}

// CheckReleaseFilter refuses a release that no Helm release, Application,
// Kustomization or HelmRelease can be: NAME or NAMESPACE/NAME, the name
// a DNS-1123 subdomain and the namespace a label ("" is every record):
// the history API's release, the MCP tools' and --release.
func CheckReleaseFilter(release string) error {
	if release == "" {
		return nil
	}
	ns, name, qualified := strings.Cut(release, "/")
	if !qualified {
		ns, name = "", release
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 || qualified && len(validation.IsDNS1123Label(ns)) > 0 {
		return fmt.Errorf("release %q: want a release's name or NAMESPACE/NAME (a Helm release, Argo CD Application, Flux Kustomization or HelmRelease), such as web or shop/web", truncate(release))
	}
	return nil
}

// checkSelector refuses a type or object name that cannot exist: a
// resource is a DNS-1123 label, a group a DNS-1123 subdomain, and a name
// at most 253 characters that can be a path segment.
func checkSelector(s history.Selector) error {
	switch {
	case len(validation.IsDNS1123Label(s.Resource)) > 0:
		return fmt.Errorf("%q: not a resource's plural name (a DNS-1123 label, such as deployments)", truncate(s.Resource))
	case s.Group != "" && len(validation.IsDNS1123Subdomain(s.Group)) > 0:
		return fmt.Errorf("%q: not an API group (a DNS-1123 subdomain, such as apps)", truncate(s.Group))
	case s.Name != "":
		return checkObjectName(s.Name)
	}
	return nil
}

// checkObjectName refuses a name no object can have: more than 253
// characters, or one that cannot be a path segment ("web/extra").
func checkObjectName(name string) error {
	if len(name) > validation.DNS1123SubdomainMaxLength || len(content.IsPathSegmentName(name)) > 0 {
		return fmt.Errorf("%q: not an object's name (at most 253 characters, no '/' or '%%')", truncate(name))
	}
	return nil
}

// truncate shortens what a caller sent before an error repeats it.
func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// CheckEvents checks which events a query lists: all, warnings or none
// ("" is all).
func CheckEvents(events string) error {
	switch events {
	case "", history.EventsAll, history.EventsWarnings, history.EventsNone:
		return nil
	}
	return fmt.Errorf("events: %q is not one of all, warnings, none", events)
}

// boolParam reads a query parameter that is a switch: true, false or
// absent (false). Anything else is refused, so that a misspelt drift=yes
// is not read as "all records".
func boolParam(s, name string) (bool, error) {
	switch s {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fmt.Errorf("%s %q: want true or false", name, truncate(s))
}
