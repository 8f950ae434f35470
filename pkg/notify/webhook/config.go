package webhook

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
)

// Type is the webhook sink type: type: webhook in a sinks entry.
var Type = notify.SinkType{Name: "webhook", NewConfig: func() notify.SinkConfig {
	return &Config{Format: FormatRecord, Timeout: defaultTimeout, Fold: true}
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
	// Format is record, cloudevents, template (Body or BodyFile), or a
	// chat preset: teams, discord, mattermost, googlechat.
	Format             string        `mapstructure:"format"`
	Timeout            time.Duration `mapstructure:"timeout"`
	InsecureSkipVerify bool          `mapstructure:"insecureSkipVerify"`
	// Body or BodyFile is format template's Go template; ContentType its
	// media type (application/json); MaxBytes the most a body may take.
	Body        string `mapstructure:"body"`
	BodyFile    string `mapstructure:"bodyFile"`
	ContentType string `mapstructure:"contentType"`
	MaxBytes    int    `mapstructure:"maxBytes"`
	// Fold, with a chat preset, folds a controller's burst into one line
	// (as the Slack sink's fold).
	Fold bool `mapstructure:"fold"`
}

// SchemaRules says, for the chart's values.schema.json, what Validate
// requires: a url, and a format of Formats.
func (c *Config) SchemaRules() map[string]any {
	return map[string]any{"required": []string{"url"}, "properties+": map[string]any{"format": map[string]any{"enum": Formats}}}
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
	errs = append(errs, c.validateBody()...)
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
	body, err := c.bodyText()
	if err != nil {
		return nil, err
	}
	opts := Options{
		URL: notify.ExpandEnv(c.URL), Headers: headers, Secret: []byte(secret), Format: c.Format,
		Timeout: c.Timeout, InsecureSkipVerify: c.InsecureSkipVerify,
		Body: BodyTemplate{Text: body, ContentType: c.ContentType, MaxBytes: c.MaxBytes},
	}
	if _, chat := presetSpecs[c.Format]; chat || c.Format == FormatTemplate {
		sink, err := NewChat(opts)
		if err != nil {
			return nil, err // not a nil *Chat in a non-nil Notifier
		}
		if chat && c.Fold {
			return NewFoldingChat(sink, log), nil
		}
		return sink, nil
	}
	sink, err := New(opts)
	if err != nil {
		return nil, err
	}
	return sink, nil
}

// validateBody checks format template's keys, and that no other format
// was given them.
func (c *Config) validateBody() []error {
	set := c.Body != "" || c.BodyFile != "" || c.ContentType != "" || c.MaxBytes != 0
	switch {
	case c.Format != FormatTemplate && set:
		return []error{fmt.Errorf("body, bodyFile, contentType and maxBytes are for format: template, not %q", c.Format)}
	case c.Format != FormatTemplate:
		return nil
	case (c.Body == "") == (c.BodyFile == ""):
		return []error{errors.New("format template: set body or bodyFile (a Go template of the request body)")}
	case c.MaxBytes < 0:
		return []error{fmt.Errorf("maxBytes: %d is negative", c.MaxBytes)}
	}
	if c.Body != "" {
		if _, err := newTemplatePreset(BodyTemplate{Text: c.Body}); err != nil {
			return []error{err}
		}
	}
	return nil
}

// bodyText is the template, read from bodyFile when that is set.
func (c *Config) bodyText() (string, error) {
	if c.BodyFile == "" {
		return c.Body, nil
	}
	b, err := os.ReadFile(c.BodyFile)
	if err != nil {
		return "", fmt.Errorf("bodyFile: %w", err)
	}
	return string(b), nil
}
