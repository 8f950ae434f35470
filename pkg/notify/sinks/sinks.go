// Package sinks lists the sink types users can configure. A new sink type
// is a package under pkg/notify (its Config, with Validate and Build, and
// a notify.SinkType) plus one line in Types.
package sinks

import (
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/kafka"
	"github.com/kubediff/kubediff/pkg/notify/otlp"
	"github.com/kubediff/kubediff/pkg/notify/slack"
	"github.com/kubediff/kubediff/pkg/notify/webhook"
)

// Types are the configurable sink types, in the order docs list them.
var Types = []notify.SinkType{
	webhook.Type,
	slack.Type,
	otlp.Type,
	kafka.Type,
}

// Lookup returns the sink type called name.
func Lookup(name string) (notify.SinkType, bool) {
	for _, t := range Types {
		if t.Name == name {
			return t, true
		}
	}
	return notify.SinkType{}, false
}

// Names lists the types' names, for messages.
func Names() []string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = t.Name
	}
	return names
}
