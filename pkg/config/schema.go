package config

import (
	"reflect"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/notify/sinks"
	"github.com/kubediff/kubediff/pkg/record"
)

// The allowed values of the keys that take one of a few words: Validate
// checks against these lists, and Schema writes them into the chart's
// values.schema.json, so that `helm install` refuses what kubediff would.
var (
	Outputs     = []string{OutputJSON, OutputText, OutputNone}
	Colors      = []string{"auto", "always", "never"}
	LogLevels   = []string{"debug", "info", "warn", "error"}
	LogFormats  = []string{"text", "json"}
	DiffStyles  = []string{StyleCompact, StyleUnified}
	ChangeTypes = []string{"added", "updated", "deleted", "event"}
	EventModes  = []string{EventsNone, EventsWarnings, EventsAll}
)

//go:generate go run ../../hack/chartschema ../../charts/kubediff/values.schema.json

// enums are the keys (dotted, "[]" for a list's items) that take one of
// a few words.
var enums = map[string][]string{
	"output":                     Outputs,
	"events":                     EventModes,
	"color":                      Colors,
	"log.level":                  LogLevels,
	"log.format":                 LogFormats,
	"diff.style":                 DiffStyles,
	"sinks[].match.types[]":      ChangeTypes,
	"sinks[].match.severity":     append([]string{""}, record.Severities...),
	"rules[].severity":           append([]string{""}, record.Severities...),
	"sinks[].type":               sinks.Names(),
	"diff.defaultsOff[].rules[]": ruleNames(),
	"release.helmStorage[]":      HelmStorages,
}

// SchemaRules is a sink type's config that also says, as JSON Schema,
// which of its keys must be set (what its Validate refuses without them),
// for the chart's values.schema.json; its "properties+" narrows some
// keys' schemas (an enum of the words Validate accepts).
type SchemaRules interface {
	SchemaRules() map[string]any
}

// Schema is the JSON Schema (draft-07) of the config file, generated from
// Config's keys (mapstructure tags) and the sink types' keys: an unknown
// key, a value of the wrong type, a word not in an enum and a sink
// without its required keys are refused. Values that need kubediff's own
// checks (durations' ranges, globs, CEL) are left to its start.
func Schema() map[string]any {
	s := schemaOf(reflect.TypeFor[Config](), "")
	s["description"] = "kubediff's config file, the keys of config.example.yaml; generated from pkg/config (make chart-schema), kubediff checks the rest at start"
	s["properties"].(map[string]any)["sinks"] = map[string]any{"type": "array", "items": sinkSchema()}
	return s
}

// schemaOf is the schema of a value of type t at key.
func schemaOf(t reflect.Type, key string) map[string]any {
	if words, ok := enums[key]; ok {
		return map[string]any{"enum": words}
	}
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return map[string]any{"type": []string{"string", "integer"}, "description": "a duration such as 30s or 5m"}
	case t.Kind() == reflect.Struct:
		props := map[string]any{}
		for f := range t.Fields() {
			tag := f.Tag.Get("mapstructure")
			if tag == "" || tag == "-" || strings.HasPrefix(tag, ",") {
				continue
			}
			props[tag] = schemaOf(f.Type, strings.TrimPrefix(key+"."+tag, "."))
		}
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	case t.Kind() == reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), key+"[]")}
	case t.Kind() == reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem(), key+"[]")}
	case t.Kind() == reflect.String:
		return map[string]any{"type": "string"}
	case t.Kind() == reflect.Bool:
		return map[string]any{"type": "boolean"}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return map[string]any{"type": "integer"}
	}
	return map[string]any{} // any value (interface{})
}

// sinkSchema is a sinks entry's schema: the keys every sink has, and per
// type its own keys and the ones it requires.
func sinkSchema() map[string]any {
	entry := schemaOf(reflect.TypeFor[SinkEntry](), "sinks[]")
	common := entry["properties"].(map[string]any)
	common["name"] = map[string]any{"type": "string", "minLength": 1}
	var perType []any
	for _, t := range sinks.Types {
		sc := t.NewConfig()
		own := schemaOf(reflect.TypeOf(sc).Elem(), "sinks[]."+t.Name)
		props := own["properties"].(map[string]any)
		for k, v := range common {
			props[k] = v
		}
		if rules, ok := sc.(SchemaRules); ok {
			for k, v := range rules.SchemaRules() {
				if k == "properties+" { // narrower schemas of some keys
					for name, narrower := range v.(map[string]any) {
						props[name] = narrower
					}
					continue
				}
				own[k] = v
			}
		}
		perType = append(perType, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": t.Name}}, "required": []string{"type"}},
			"then": own,
		})
	}
	return map[string]any{"type": "object", "required": []string{"name", "type"}, "properties": common, "allOf": perType}
}
