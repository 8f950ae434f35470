// Package config holds kubediff's typed configuration, its defaults and its
// validation. It knows nothing about where values come from (file,
// environment, flags): internal/cli layers those with viper and hands the
// result here.
package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Output formats accepted by the output key.
const (
	OutputJSON = "json"
	OutputText = "text"
)

// Config is everything kubediff can be told. Field tags are the keys users
// write in the config file; config.example.yaml documents each one.
type Config struct {
	// Kubeconfig is the path of a kubeconfig file; empty means the usual
	// rules (KUBECONFIG, ~/.kube/config, then in-cluster).
	Kubeconfig string `mapstructure:"kubeconfig"`
	// Context is the kubeconfig context to use; empty means the current one.
	Context string `mapstructure:"context"`
	// Namespaces limits watching to these namespaces; empty means all.
	Namespaces []string `mapstructure:"namespaces"`
	// Resources limits watching to these types (names as kubectl accepts
	// them); empty means every type.
	Resources []string `mapstructure:"resources"`
	// ExcludeResources removes these types from what is watched.
	ExcludeResources []string `mapstructure:"excludeResources"`
	// Output is the encoding of change records on stdout: json or text.
	Output string `mapstructure:"output"`
	// Color controls colour in text output: auto, always or never.
	Color string `mapstructure:"color"`
	// Diff configures what counts as a change.
	Diff DiffConfig `mapstructure:"diff"`
	// Log configures operational logging on stderr.
	Log LogConfig `mapstructure:"log"`
	// ResyncPeriod is how often informers replay their cache; replays never
	// produce records, so the default (0) turns them off.
	ResyncPeriod time.Duration `mapstructure:"resyncPeriod"`
	// QueueSize is how many records each sink may have waiting before new
	// ones are dropped (with a log line and a counter).
	QueueSize int `mapstructure:"queueSize"`
}

// DiffConfig configures the diff stage.
type DiffConfig struct {
	// IgnorePaths are JSON Pointers (RFC 6901) of fields whose changes are not
	// reported, on top of the built-in defaults. A segment "*" matches any
	// key or list index.
	IgnorePaths []string `mapstructure:"ignorePaths"`
}

// LogConfig configures operational logs.
type LogConfig struct {
	// Level is debug, info, warn or error.
	Level string `mapstructure:"level"`
	// Format is text or json.
	Format string `mapstructure:"format"`
}

// Default returns the configuration used when nothing is set.
func Default() Config {
	return Config{
		Output:    OutputJSON,
		Color:     "auto",
		Log:       LogConfig{Level: "info", Format: "text"},
		QueueSize: 10000,
	}
}

// Validate checks values that decode fine but make no sense. Each error
// names the key so the user knows what to fix.
func (c Config) Validate() error {
	var errs []error
	if c.Output != OutputJSON && c.Output != OutputText {
		errs = append(errs, fmt.Errorf("output: %q is not one of json, text", c.Output))
	}
	if !oneOf(c.Color, "auto", "always", "never") {
		errs = append(errs, fmt.Errorf("color: %q is not one of auto, always, never", c.Color))
	}
	if !oneOf(c.Log.Level, "debug", "info", "warn", "error") {
		errs = append(errs, fmt.Errorf("log.level: %q is not one of debug, info, warn, error", c.Log.Level))
	}
	if !oneOf(c.Log.Format, "text", "json") {
		errs = append(errs, fmt.Errorf("log.format: %q is not one of text, json", c.Log.Format))
	}
	if c.ResyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("resyncPeriod: %s is negative", c.ResyncPeriod))
	}
	if c.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("queueSize: %d must be at least 1", c.QueueSize))
	}
	for _, ns := range c.Namespaces {
		if strings.TrimSpace(ns) == "" {
			errs = append(errs, errors.New("namespaces: an entry is empty"))
		}
	}
	for _, p := range c.Diff.IgnorePaths {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("diff.ignorePaths: %q is not a JSON Pointer (it must start with /)", p))
		}
	}
	return errors.Join(errs...)
}

func oneOf(s string, allowed ...string) bool { return slices.Contains(allowed, s) }
