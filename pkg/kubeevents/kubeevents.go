// Package kubeevents reads Kubernetes Event objects as facts about the
// object each one regards (docs/why.md): what happened to it (reason,
// type, message), how often and when, and who said so. It reads both
// APIs that serve Events, events.k8s.io/v1 and core v1: they are the
// same stored objects under two shapes.
package kubeevents

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

// Ref names the object an Event regards, as its reference says.
type Ref struct {
	APIVersion, Kind, Namespace, Name, UID, ResourceVersion string
}

// Fact is one Event object read: the object it regards and what it said.
type Fact struct {
	Regarding Ref
	Event     record.Event
	// UID and ResourceVersion are the Event object's own.
	UID, ResourceVersion string
}

// IsEvent says whether group/kind are an Event type's (core v1 or
// events.k8s.io/v1).
func IsEvent(group, kind string) bool {
	return kind == "Event" && (group == "" || group == "events.k8s.io")
}

// withheld replaces the message of an Event about a Secret: controllers
// write what failed into it, and kubediff never keeps what a Secret
// holds, nor words that may quote it.
const withheld = "(message withheld: an Event about a Secret)"

// Bounds of what an Event says, as kept on a record: events.k8s.io/v1
// validates reason and reportingController to 128 characters and a note
// to 1 KiB, but core v1, which anyone who may create Events can write
// through, bounds none of them. A longer value is cut, with a marker.
const (
	// MaxReason bounds an Event's reason (and its type).
	MaxReason = 128
	// MaxComponent bounds who reported it (reportingController,
	// reportingComponent, source.component).
	MaxComponent = 128
	// MaxRegardingName bounds the name an Event's reference gives: the
	// longest name (a DNS subdomain) the API server lets almost every
	// type have. An Event naming a longer one regards nothing.
	MaxRegardingName = 253
)

// cutMarker ends a value that was cut.
const cutMarker = "…"

// Read reads an Event object of either API; false when it names no
// object or no reason (nothing to say about anything).
func Read(u *unstructured.Unstructured) (Fact, bool) {
	obj := u.Object
	regarding := nestedMap(obj, "regarding")
	message := str(obj, "note")
	if regarding == nil { // core v1
		regarding = nestedMap(obj, "involvedObject")
		message = str(obj, "message")
	}
	f := Fact{UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion()}
	f.Regarding = Ref{APIVersion: str(regarding, "apiVersion"), Kind: str(regarding, "kind"), Namespace: str(regarding, "namespace"),
		Name: str(regarding, "name"), UID: str(regarding, "uid"), ResourceVersion: str(regarding, "resourceVersion")}
	if f.Regarding.Kind == "" || f.Regarding.Name == "" || str(obj, "reason") == "" || !plausibleName(f.Regarding.Name) {
		return Fact{}, false
	}
	if aboutSecret(f.Regarding.APIVersion, f.Regarding.Kind) {
		message = withheld
	}
	first, last := times(u)
	f.Event = record.Event{
		Reason: word(str(obj, "reason"), MaxReason), Type: word(str(obj, "type"), MaxReason),
		Message: cut(message, record.MaxEventMessage), Count: count(obj),
		First: record.Timestamp(first), Last: record.Timestamp(last), ReportingController: word(controller(obj), MaxComponent),
		Namespace: u.GetNamespace(), Name: u.GetName(),
	}
	if f.Event.Type == "" {
		f.Event.Type = record.EventNormal
	}
	return f, true
}

// plausibleName says whether an object can have name: no longer than
// MaxRegardingName, and no control character (no type's names allow one).
func plausibleName(name string) bool {
	return len(name) <= MaxRegardingName && !strings.ContainsFunc(name, unicode.IsControl)
}

// cut bounds s to max bytes, cut at a character's start and marked.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strings.ToValidUTF8(s[:i], "\uFFFD") + cutMarker
}

// word is a one-line value (a reason, a type, a component) bounded to max
// bytes: a control character in it (a line break, a terminal's escape)
// becomes U+FFFD, so that it cannot break or restyle a line of text.
func word(s string, max int) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, cut(s, max))
}

// aboutSecret says whether a reference names a core Secret.
func aboutSecret(apiVersion, kind string) bool {
	return kind == "Secret" && (apiVersion == "v1" || apiVersion == "")
}

// Scrub withholds the message of an Event object about a Secret, in
// place, before the object is cached (and so stored in the state dir, or
// reported as a change when Events are watched as changes): nothing a
// Secret holds, nor words that may quote it, is kept anywhere.
func Scrub(u *unstructured.Unstructured) {
	for _, ref := range []string{"regarding", "involvedObject"} {
		r := nestedMap(u.Object, ref)
		if r == nil || !aboutSecret(str(r, "apiVersion"), str(r, "kind")) {
			continue
		}
		for _, field := range []string{"note", "message"} {
			if _, ok := u.Object[field]; ok {
				u.Object[field] = withheld
			}
		}
	}
}

// count is how many times the Event happened: its series' count, else
// the count of the older API, at least 1.
func count(obj map[string]any) int {
	if series := nestedMap(obj, "series"); series != nil {
		if n := integer(series, "count"); n > 0 {
			return n
		}
	}
	return max(1, integer(obj, "deprecatedCount"), integer(obj, "count"))
}

// times are when the Event first and last happened, from whichever
// fields its reporter set.
func times(u *unstructured.Unstructured) (first, last time.Time) {
	obj := u.Object
	first = firstTime(obj, "deprecatedFirstTimestamp", "firstTimestamp", "eventTime")
	if first.IsZero() {
		first = u.GetCreationTimestamp().Time
	}
	last = firstTime(nestedMap(obj, "series"), "lastObservedTime")
	if last.IsZero() {
		last = firstTime(obj, "deprecatedLastTimestamp", "lastTimestamp", "eventTime")
	}
	if last.Before(first) {
		last = first
	}
	return first.UTC(), last.UTC()
}

// controller names who reported the Event.
func controller(obj map[string]any) string {
	if c := str(obj, "reportingController"); c != "" {
		return c
	}
	if c := str(obj, "reportingComponent"); c != "" {
		return c
	}
	if c := str(nestedMap(obj, "deprecatedSource"), "component"); c != "" {
		return c
	}
	return str(nestedMap(obj, "source"), "component")
}

// firstTime is the first of keys that holds a time.
func firstTime(obj map[string]any, keys ...string) time.Time {
	for _, k := range keys {
		if s := str(obj, k); s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return t
			}
		}
	}
	return time.Time{}
}

func nestedMap(obj map[string]any, key string) map[string]any {
	m, _ := obj[key].(map[string]any)
	return m
}

func str(obj map[string]any, key string) string {
	s, _ := obj[key].(string)
	return s
}

func integer(obj map[string]any, key string) int {
	switch n := obj[key].(type) {
	case int64:
		return int(n)
	case float64:
		return int(n)
	case int:
		return n
	}
	return 0
}
