package otlp

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
)

// Type is the OTLP sink type: type: otlp in a sinks entry.
var Type = notify.SinkType{Name: "otlp", NewConfig: func() notify.SinkConfig {
	return &Config{Protocol: HTTPProtobuf, Timeout: 10 * time.Second}
}}

// Config is an OTLP sink's keys. Endpoint and header values may name
// environment variables as ${NAME}.
type Config struct {
	// Endpoint is the collector's base URL, such as http://collector:4318.
	Endpoint string            `mapstructure:"endpoint"`
	Protocol string            `mapstructure:"protocol"`
	Headers  map[string]string `mapstructure:"headers"`
	Timeout  time.Duration     `mapstructure:"timeout"`
}

// SchemaRules says, for the chart's values.schema.json, what Validate
// requires: an endpoint.
func (c *Config) SchemaRules() map[string]any {
	return map[string]any{"required": []string{"endpoint"}}
}

// Validate implements notify.SinkConfig.
func (c *Config) Validate() error {
	var errs []error
	if c.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: empty (the collector's base URL, such as http://collector:4318)"))
	} else if _, err := notify.ParseHTTPURL("endpoint", notify.ExpandEnv(c.Endpoint)); err != nil {
		errs = append(errs, err)
	}
	if c.Protocol != HTTPProtobuf && c.Protocol != GRPC {
		errs = append(errs, fmt.Errorf("protocol: %q is not one of %s, %s", c.Protocol, HTTPProtobuf, GRPC))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: %s is negative", c.Timeout))
	}
	return errors.Join(errs...)
}

// Version is kubediff's version, reported as service.version; set by the
// command line.
var Version = "dev"

// Build implements notify.SinkConfig.
func (c *Config) Build(*slog.Logger) (notify.Notifier, error) {
	headers := make(map[string]string, len(c.Headers))
	for k, v := range c.Headers {
		headers[k] = notify.ExpandEnv(v)
	}
	sink, err := New(Options{Endpoint: notify.ExpandEnv(c.Endpoint), Protocol: c.Protocol, Headers: headers, Timeout: c.Timeout, Version: Version})
	if err != nil {
		return nil, err // not a nil *Sink in a non-nil Notifier
	}
	return sink, nil
}
