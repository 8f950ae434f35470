package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
)

// Type is the Kafka sink type: type: kafka in a sinks entry.
var Type = notify.SinkType{Name: "kafka", NewConfig: func() notify.SinkConfig {
	return &Config{Compression: CompressionLZ4, Timeout: defaultTimeout, Format: FormatRecord, Source: "kubediff"}
}}

// defaultTimeout bounds one produce unless the config says otherwise.
const defaultTimeout = 10 * time.Second

// Compression codecs.
const (
	CompressionNone   = "none"
	CompressionGzip   = "gzip"
	CompressionSnappy = "snappy"
	CompressionLZ4    = "lz4"
	CompressionZstd   = "zstd"
)

var compressions = []string{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

var mechanisms = []string{SASLPlain, SASLScramSHA256, SASLScramSHA512}

// Config is a Kafka sink's keys. Brokers, the SASL username and password
// may name environment variables as ${NAME}.
type Config struct {
	// Brokers are the bootstrap brokers, host:port each.
	Brokers     []string      `mapstructure:"brokers"`
	Topic       string        `mapstructure:"topic"`
	Compression string        `mapstructure:"compression"`
	Timeout     time.Duration `mapstructure:"timeout"`
	TLS         TLSConfig     `mapstructure:"tls"`
	SASL        SASLConfig    `mapstructure:"sasl"`
	// Format is record (default) or cloudevents; Source is the events'
	// source attribute (default kubediff).
	Format string `mapstructure:"format"`
	Source string `mapstructure:"source"`
}

// Formats of a record's value.
const (
	FormatRecord      = "record"
	FormatCloudEvents = "cloudevents"
)

// TLSConfig is the tls key. TLS is on when enabled is true or any other
// key is set; without caFile the system's roots verify the brokers.
type TLSConfig struct {
	Enabled            bool   `mapstructure:"enabled"`
	CAFile             string `mapstructure:"caFile"`
	CertFile           string `mapstructure:"certFile"`
	KeyFile            string `mapstructure:"keyFile"`
	InsecureSkipVerify bool   `mapstructure:"insecureSkipVerify"`
}

// on reports whether the config asks for TLS.
func (t TLSConfig) on() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.InsecureSkipVerify
}

// SASLConfig is the sasl key; no mechanism means no SASL.
type SASLConfig struct {
	Mechanism    string `mapstructure:"mechanism"`
	Username     string `mapstructure:"username"`
	Password     string `mapstructure:"password"`
	PasswordFile string `mapstructure:"passwordFile"`
}

// topicName is what Kafka accepts as a topic's name.
var topicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// SchemaRules says, for the chart's values.schema.json, what Validate
// requires: brokers, a topic and a compression of the known ones.
func (c *Config) SchemaRules() map[string]any {
	return map[string]any{"required": []string{"brokers", "topic"}, "properties+": map[string]any{"compression": map[string]any{"enum": compressions}}}
}

// Validate implements notify.SinkConfig.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("brokers: empty (the bootstrap brokers, such as [kafka-0.kafka:9092])"))
	}
	for i, b := range c.Brokers {
		// A broker's address carries no secret, but one named by ${NAME}
		// is only known when the variable is read: say which entry.
		if _, port, err := net.SplitHostPort(notify.ExpandEnv(b)); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("brokers[%d]: must be host:port", i))
		}
	}
	if !topicName.MatchString(c.Topic) || c.Topic == "." || c.Topic == ".." {
		errs = append(errs, fmt.Errorf("topic: %q is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)", c.Topic))
	}
	if !slices.Contains(compressions, c.Compression) {
		errs = append(errs, fmt.Errorf("compression: %q is not one of %s", c.Compression, strings.Join(compressions, ", ")))
	}
	if c.Format != FormatRecord && c.Format != FormatCloudEvents {
		errs = append(errs, fmt.Errorf("format: %q is not one of %s, %s", c.Format, FormatRecord, FormatCloudEvents))
	}
	if c.Timeout < time.Second { // franz-go's least delivery timeout
		errs = append(errs, fmt.Errorf("timeout: %s is less than 1s", c.Timeout))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("tls: set certFile and keyFile together"))
	}
	return errors.Join(append(errs, c.SASL.validate()...)...)
}

func (s SASLConfig) validate() []error {
	if s.Mechanism == "" {
		if s.Username != "" || s.Password != "" || s.PasswordFile != "" {
			return []error{fmt.Errorf("sasl.mechanism: empty, yet a username or password is set (one of %s)", strings.Join(mechanisms, ", "))}
		}
		return nil
	}
	var errs []error
	if !slices.Contains(mechanisms, strings.ToUpper(s.Mechanism)) {
		errs = append(errs, fmt.Errorf("sasl.mechanism: %q is not one of %s", s.Mechanism, strings.Join(mechanisms, ", ")))
	}
	if s.Username == "" {
		errs = append(errs, errors.New("sasl.username: empty"))
	}
	switch {
	case s.Password != "" && s.PasswordFile != "":
		errs = append(errs, errors.New("sasl: set password or passwordFile, not both"))
	case s.Password == "" && s.PasswordFile == "":
		errs = append(errs, errors.New("sasl: set password or passwordFile"))
	}
	return errs
}

// Build implements notify.SinkConfig. It reads the files the config
// names but connects to no broker: the first record does.
func (c *Config) Build(log *slog.Logger) (notify.Notifier, error) {
	opts := Options{Topic: c.Topic, Compression: c.Compression, Timeout: c.Timeout, Format: c.Format, Source: c.Source, Log: log}
	for _, b := range c.Brokers {
		opts.Brokers = append(opts.Brokers, notify.ExpandEnv(b))
	}
	if c.TLS.on() {
		tc, err := c.TLS.build()
		if err != nil {
			return nil, err
		}
		opts.TLS = tc
		if c.TLS.InsecureSkipVerify {
			log.Warn("TLS verification is off for this Kafka sink")
		}
	}
	if c.SASL.Mechanism != "" {
		password, err := notify.ReadSecret(c.SASL.Password, c.SASL.PasswordFile, "sasl.passwordFile")
		if err != nil {
			return nil, err
		}
		opts.SASL = &SASL{Mechanism: strings.ToUpper(c.SASL.Mechanism), Username: notify.ExpandEnv(c.SASL.Username), Password: password}
	}
	sink, err := New(opts)
	if err != nil {
		return nil, err // not a nil *Sink in a non-nil Notifier
	}
	return sink, nil
}
