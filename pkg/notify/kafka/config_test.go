package kafka_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/kafka"
	"github.com/kubediff/kubediff/pkg/notify/notifytest"
)

const password = "pw-kafka-canary-42"

// TestSASL: each mechanism kfake offers authenticates with the right
// password (given inline, from ${ENV} or from a file) and delivers; a
// wrong one is an AuthFailure (records kept and retried slowly) whose
// message says what to check and never shows the password.
func TestSASL(t *testing.T) {
	t.Setenv("KAFKA_PASSWORD", password)
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ mechanism, password, passwordFile string }{
		{kafka.SASLPlain, password, ""},
		{kafka.SASLScramSHA256, "${KAFKA_PASSWORD}", ""},
		{kafka.SASLScramSHA512, "", file},
	} {
		t.Run(tc.mechanism, func(t *testing.T) {
			c := newCluster(t, kfake.EnableSASL(), kfake.Superuser(tc.mechanism, "kubediff", password))
			sasl := func(pw, file string) func(*kafka.Config) {
				return func(cfg *kafka.Config) {
					cfg.Timeout = time.Second
					cfg.SASL = kafka.SASLConfig{Mechanism: strings.ToLower(tc.mechanism), Username: "kubediff", Password: pw, PasswordFile: file}
				}
			}
			q := notifytest.Deliver(t, buildSink(t, c, sasl(tc.password, tc.passwordFile)), changes(0, 3), fast, nil)
			if s := q.Stats(); s.Delivered != 3 {
				t.Fatalf("stats %+v, want 3 delivered", s)
			}
			checkDelivered(t, consume(t, c, 3, kgoSASL(tc.mechanism)), changes(0, 3))

			wrong := "wrong-" + password
			err := buildSink(t, c, sasl(wrong, "")).Notify(context.Background(), change(0))
			if !notify.IsAuthFailure(err) || !strings.Contains(err.Error(), "authentication") {
				t.Fatalf("wrong password: %v; want an AuthFailure saying authentication failed", err)
			}
			if strings.Contains(err.Error(), password) {
				t.Fatalf("the error shows the password: %v", err)
			}
			cfg := kafka.Type.NewConfig().(*kafka.Config)
			cfg.Brokers, cfg.Topic = c.ListenAddrs(), topic
			sasl(wrong, "")(cfg)
			notifytest.AssertNoSecretLeak(t, cfg, password)
		})
	}
}

// TestConfigValidate: every problem is reported, each naming its key,
// none showing the password.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*kafka.Config)
		want []string
	}{
		{"defaults with brokers and topic", func(*kafka.Config) {}, nil},
		{"nothing", func(c *kafka.Config) { c.Brokers, c.Topic = nil, "" }, []string{"brokers: empty", "topic: \"\" is not"}},
		{"bad values", func(c *kafka.Config) {
			c.Brokers = []string{"kafka:9092", "no-port"}
			c.Topic, c.Compression, c.Timeout = "a topic", "brotli", 10*time.Millisecond
		}, []string{"brokers[1]: must be host:port", "topic: \"a topic\"", "compression: \"brotli\" is not one of none, gzip, snappy, lz4, zstd", "timeout: 10ms is less than 1s"}},
		{"tls halves", func(c *kafka.Config) { c.TLS.CertFile = "client.crt" }, []string{"tls: set certFile and keyFile together"}},
		{"sasl", func(c *kafka.Config) {
			c.SASL = kafka.SASLConfig{Mechanism: "GSSAPI", Password: password, PasswordFile: "/pw"}
		}, []string{"sasl.mechanism: \"GSSAPI\" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", "sasl.username: empty", "sasl: set password or passwordFile, not both"}},
		{"sasl without mechanism", func(c *kafka.Config) { c.SASL.Password = password }, []string{"sasl.mechanism: empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := kafka.Type.NewConfig().(*kafka.Config)
			cfg.Brokers, cfg.Topic = []string{"kafka-0.kafka:9092"}, topic
			tc.set(cfg)
			err := cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// TestTLSFilesAreRead: Build names the key of a file it cannot use.
func TestTLSFilesAreRead(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tls  kafka.TLSConfig
		want string
	}{
		{kafka.TLSConfig{CAFile: "/nonexistent/ca.pem"}, "tls.caFile: open /nonexistent/ca.pem"},
		{kafka.TLSConfig{CAFile: empty}, "tls.caFile: no PEM certificate in it"},
		{kafka.TLSConfig{CertFile: empty, KeyFile: empty}, "tls.certFile, tls.keyFile:"},
	} {
		cfg := kafka.Type.NewConfig().(*kafka.Config)
		cfg.Brokers, cfg.Topic, cfg.TLS = []string{"kafka:9093"}, topic, tc.tls
		if _, err := cfg.Build(nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("tls %+v: error %v, want %q", tc.tls, err, tc.want)
		}
	}
}

// kgoSASL is the test consumer's login.
func kgoSASL(mechanism string) kgo.Opt {
	switch mechanism {
	case kafka.SASLScramSHA256:
		return kgo.SASL(scram.Auth{User: "kubediff", Pass: password}.AsSha256Mechanism())
	case kafka.SASLScramSHA512:
		return kgo.SASL(scram.Auth{User: "kubediff", Pass: password}.AsSha512Mechanism())
	}
	return kgo.SASL(plain.Auth{User: "kubediff", Pass: password}.AsMechanism())
}
