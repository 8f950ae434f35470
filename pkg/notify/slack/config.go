package slack

import (
	"errors"
	"log/slog"

	"github.com/kubediff/kubediff/pkg/notify"
)

// Type is the Slack sink type: type: slack in a sinks entry.
var Type = notify.SinkType{Name: "slack", NewConfig: func() notify.SinkConfig { return &Config{Fold: true} }}

// Config is a Slack sink's keys. Token and APIURL may name environment
// variables as ${NAME}.
type Config struct {
	// Token or TokenFile is the bot token (xoxb-…).
	Token     string `mapstructure:"token"`
	TokenFile string `mapstructure:"tokenFile"`
	Channel   string `mapstructure:"channel"`
	// APIURL overrides https://slack.com/api/ (Enterprise proxies, tests).
	APIURL string `mapstructure:"apiURL"`
	// Fold posts a burst of records of objects one owner controls (a
	// rollout's Pods and ReplicaSets) as one line once it has settled.
	Fold bool `mapstructure:"fold"`
}

// Validate implements notify.SinkConfig.
func (c *Config) Validate() error {
	var errs []error
	if c.Channel == "" {
		errs = append(errs, errors.New("channel: empty"))
	}
	if (c.Token == "") == (c.TokenFile == "") {
		errs = append(errs, errors.New("set exactly one of token, tokenFile"))
	}
	if c.APIURL != "" {
		if _, err := notify.ParseHTTPURL("apiURL", notify.ExpandEnv(c.APIURL)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SchemaRules says, for the chart's values.schema.json, what Validate
// requires: a channel, and exactly one of token and tokenFile.
func (c *Config) SchemaRules() map[string]any {
	return map[string]any{"required": []string{"channel"}, "oneOf": []any{
		map[string]any{"required": []string{"token"}}, map[string]any{"required": []string{"tokenFile"}}}}
}

// Build implements notify.SinkConfig.
func (c *Config) Build(log *slog.Logger) (notify.Notifier, error) {
	token, err := notify.ReadSecret(c.Token, c.TokenFile, "tokenFile")
	if err != nil {
		return nil, err
	}
	sink, err := New(Options{Token: token, Channel: c.Channel, APIURL: notify.ExpandEnv(c.APIURL)})
	if err != nil {
		return nil, err // not a nil *Sink in a non-nil Notifier
	}
	if c.Fold {
		return NewFolding(sink, log), nil
	}
	return sink, nil
}
