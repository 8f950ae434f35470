package webhook

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
)

// Type is the webhook sink type: type: webhook in a sinks entry.
var Type = notify.SinkType{Name: "webhook", NewConfig: func() notify.SinkConfig {
	return &Config{Format: FormatRecord, Timeout: defaultTimeout}
}}

// defaultTimeout bounds one request unless the config says otherwise.
const defaultTimeout = 10 * time.Second

// Config is a webhook sink's keys. URL, header values and Secret may name
// environment variables as ${NAME}.
type Config struct {
	URL     string            `mapstructure:"url"`
	Headers map[string]string `mapstructure:"headers"`
	// Secret or SecretFile signs each body (HMAC-SHA256).
	Secret     string `mapstructure:"secret"`
	SecretFile string `mapstructure:"secretFile"`
	// Format is record, cloudevents, or a chat preset: teams, discord,
	// mattermost, googlechat.
	Format             string        `mapstructure:"format"`
	Timeout            time.Duration `mapstructure:"timeout"`
	InsecureSkipVerify bool          `mapstructure:"insecureSkipVerify"`
}

// Validate implements notify.SinkConfig.
func (c *Config) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("url: empty"))
	} else if _, err := notify.ParseHTTPURL("url", notify.ExpandEnv(c.URL)); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains(Formats, c.Format) {
		errs = append(errs, fmt.Errorf("format: %q is not one of %s", c.Format, strings.Join(Formats, ", ")))
	}
	if c.Secret != "" && c.SecretFile != "" {
		errs = append(errs, errors.New("set secret or secretFile, not both"))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: %s is negative", c.Timeout))
	}
	return errors.Join(errs...)
}

// Build implements notify.SinkConfig.
func (c *Config) Build(log *slog.Logger) (notify.Notifier, error) {
	secret, err := notify.ReadSecret(c.Secret, c.SecretFile, "secretFile")
	if err != nil {
		return nil, err
	}
	headers := make(map[string]string, len(c.Headers))
	for k, v := range c.Headers {
		headers[k] = notify.ExpandEnv(v)
	}
	if c.InsecureSkipVerify {
		log.Warn("TLS verification is off for this webhook")
	}
	opts := Options{
		URL: notify.ExpandEnv(c.URL), Headers: headers, Secret: []byte(secret), Format: c.Format,
		Timeout: c.Timeout, InsecureSkipVerify: c.InsecureSkipVerify,
	}
	if _, chat := presetSpecs[c.Format]; chat {
		sink, err := NewChat(opts)
		if err != nil {
			return nil, err // not a nil *Chat in a non-nil Notifier
		}
		return sink, nil
	}
	sink, err := New(opts)
	if err != nil {
		return nil, err
	}
	return sink, nil
}
