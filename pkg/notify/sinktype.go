package notify

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
)

// SinkType is a kind of sink users configure in the sinks list (type:
// webhook). Its package owns its keys, their defaults and validation, and
// its constructor; pkg/notify/sinks lists the types.
type SinkType struct {
	// Name is the value of the type key.
	Name string
	// NewConfig returns the type's config holding its defaults. A sink
	// entry's own keys (all but name, type, match and queueSize) are
	// decoded into it through its mapstructure tags.
	NewConfig func() SinkConfig
}

// SinkConfig is a sink type's own part of a sink entry.
type SinkConfig interface {
	// Validate reports every problem, each naming its key ("url: empty"),
	// without opening files or connections and without showing a secret.
	Validate() error
	// Build returns the sink. It may read the files the config names.
	Build(log *slog.Logger) (Notifier, error)
}

// ParseHTTPURL accepts an absolute http or https URL. Its error names the
// key but never quotes the URL, which may carry credentials.
func ParseHTTPURL(key, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: must be an absolute http or https URL", key)
	}
	return u, nil
}

// SafeURL renders u for logs and errors as scheme and host, with "/…" in
// place of any path: user info and query strings often carry credentials,
// and Slack's, Discord's and Teams' incoming-webhook URLs carry theirs in
// the path. The host, beside the sink's name, says which sink it is.
func SafeURL(u *url.URL) string {
	s := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	if (u.Path != "" && u.Path != "/") || u.Opaque != "" {
		s += "/…"
	}
	return s
}

// RedactEcho replaces, in s (a receiver's answer quoted in an error), each
// part of the request's URL u that may carry a secret and that receivers
// often echo ("Cannot POST /services/T0/B0/XXXX"): its path with or
// without the query, and the query. Each becomes "…".
func RedactEcho(s string, u *url.URL) string {
	parts := []string{u.RequestURI(), u.EscapedPath(), u.Path, u.RawQuery}
	slices.SortFunc(parts, func(a, b string) int { return len(b) - len(a) }) // a part before the parts it holds
	for _, p := range parts {
		if len(p) > 1 {
			s = strings.ReplaceAll(s, p, "…")
		}
	}
	return s
}

// envReference is the ${NAME} form config values may use.
var envReference = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ExpandEnv replaces ${NAME} with the variable's value and leaves every
// other $ alone: secrets and URLs may contain one.
func ExpandEnv(s string) string {
	return envReference.ReplaceAllStringFunc(s, func(ref string) string {
		return os.Getenv(ref[2 : len(ref)-1])
	})
}

// ReadSecret returns a secret given inline (with ${NAME} expanded) or in
// a file (fileKey names the file's key in errors). The value itself never
// appears in an error.
func ReadSecret(inline, file, fileKey string) (string, error) {
	if file == "" {
		return ExpandEnv(inline), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", fileKey, err)
	}
	return strings.TrimSpace(string(data)), nil
}
