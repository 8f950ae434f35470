package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/diff"
	sinktypes "github.com/kubediff/kubediff/pkg/notify/sinks"
	"github.com/kubediff/kubediff/pkg/rules"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubediff.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// load parses args for `kubediff watch` and returns the layered config.
func load(t *testing.T, args ...string) (config.Config, error) {
	t.Helper()
	root := newRootCommand("kubediff", &bytes.Buffer{}, &bytes.Buffer{})
	watch, _, err := root.Find([]string{"watch"})
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return loadConfig(watch)
}

func TestConfigPrecedenceFileThenEnvThenFlags(t *testing.T) {
	file := writeFile(t, `
output: text
namespaces: [from-file]
queueSize: 5
log:
  level: warn
diff:
  ignorePaths: [/status/observedGeneration]
`)
	t.Setenv("KUBEDIFF_OUTPUT", "json")
	t.Setenv("KUBEDIFF_LOG_LEVEL", "debug")
	cfg, err := load(t, "--config", file, "-n", "from-flag", "--log-level", "error")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Output != "json" {
		t.Errorf("output = %q: the environment should override the file", cfg.Output)
	}
	if cfg.Log.Level != "error" {
		t.Errorf("log.level = %q: a flag should override the environment", cfg.Log.Level)
	}
	if !reflect.DeepEqual(cfg.Namespaces, []string{"from-flag"}) {
		t.Errorf("namespaces = %v: a flag should override the file", cfg.Namespaces)
	}
	if cfg.QueueSize != 5 || !reflect.DeepEqual(cfg.Diff.IgnorePaths, []string{"/status/observedGeneration"}) {
		t.Errorf("file values not applied: %+v", cfg)
	}
}

func TestConfigDefaultsWithoutFile(t *testing.T) {
	cfg, err := load(t)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, config.Default()) {
		t.Fatalf("config = %+v, want defaults %+v", cfg, config.Default())
	}
}

// rulePack takes a rule's name, or an object naming it with what it is
// given, in a file; names in the environment.
func TestRulePackTakesNamesAndObjects(t *testing.T) {
	file := writeFile(t, "rulePack:\n  - node-cordoned\n  - {name: secret-deleted, namespaces: [prod-*], severity: critical}\n")
	cfg, err := load(t, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	want := []rules.PackEntry{{Name: "node-cordoned"}, {Name: "secret-deleted", Namespaces: []string{"prod-*"}, Severity: "critical"}}
	if !reflect.DeepEqual(cfg.RulePack, want) {
		t.Errorf("rulePack %+v, want %+v", cfg.RulePack, want)
	}
	t.Setenv("KUBEDIFF_RULEPACK", "crd-deleted,node-cordoned")
	if cfg, err = load(t); err != nil || !reflect.DeepEqual(cfg.RulePack, rules.PackNamed("crd-deleted", "node-cordoned")) {
		t.Errorf("rulePack from the environment: %+v, %v", cfg.RulePack, err)
	}
}

func TestAllNamespacesOverridesNamespaces(t *testing.T) {
	file := writeFile(t, "namespaces: [a, b]\n")
	cfg, err := load(t, "--config", file, "-A")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Namespaces) != 0 {
		t.Fatalf("namespaces = %v with -A", cfg.Namespaces)
	}
}

func TestConfigFileFromEnvironment(t *testing.T) {
	t.Setenv("KUBEDIFF_CONFIG", writeFile(t, "output: text\n"))
	cfg, err := load(t)
	if err != nil || cfg.Output != "text" {
		t.Fatalf("config = %+v, %v", cfg, err)
	}
}

// Bad input exits 2 with one message naming what to fix.
func TestBadConfigIsAUsageErrorNamingKeyAndFile(t *testing.T) {
	tests := []struct {
		name, file string
		args       []string
		env        map[string]string
		want       []string
	}{
		{name: "unknown key", file: "output: json\nnamepsaces: [a]\n", want: []string{"unknown key namepsaces", "kubediff.yaml"}},
		{name: "unknown nested key", file: "log:\n  colour: red\n", want: []string{"unknown key log.colour", "kubediff.yaml"}},
		{name: "wrong type", file: "queueSize: lots\n", want: []string{"queueSize", "kubediff.yaml"}},
		{name: "list given a map", file: "namespaces: {a: b}\n", want: []string{"namespaces", "kubediff.yaml"}},
		{name: "bad value", file: "output: xml\n", want: []string{`output: "xml" is not one of json, text`, "kubediff.yaml"}},
		{name: "unknown key in a list item", file: "diff:\n  ignore:\n    - resources: [pods]\n      pathz: [/a]\n", want: []string{"pathz", "kubediff.yaml"}},
		{name: "ignore rule without resources", file: "diff:\n  ignore:\n    - paths: [/a]\n", want: []string{"diff.ignore[0].resources"}},
		{name: "queue bound not a size", file: "queueMaxBytes: lots\n", want: []string{`queueMaxBytes: "lots" is not a size`, "kubediff.yaml"}},
		{name: "queue bound too small", args: []string{"--queue-max-bytes", "100"}, want: []string{`queueMaxBytes: "100" must be`, "at least 1Ki"}},
		{name: "sink queue bound", file: "sinks:\n  - name: a\n    type: webhook\n    url: http://127.0.0.1:1/\n    queueMaxBytes: 1.5\n", want: []string{"sinks[0].queueMaxBytes", "kubediff.yaml"}},
		// A huge queue once failed at start: out of memory, or a panic.
		{name: "queue size over the maximum", args: []string{"--queue-size", "100000000"}, want: []string{"queueSize (--queue-size): 100000000 is over the maximum of 100000", "--state-dir"}},
		{name: "largest queue size", file: "queueSize: 9223372036854775807\n", want: []string{"queueSize (--queue-size): 9223372036854775807 is over the maximum", "kubediff.yaml"}},
		{name: "sink queue size over the maximum", file: "sinks:\n  - name: a\n    type: webhook\n    url: http://127.0.0.1:1/\n    queueSize: 1000001\n", want: []string{"sinks[a].queueSize: 1000001 is over the maximum of 100000", "kubediff.yaml"}},
		{name: "bad diff style", args: []string{"--diff-style", "side-by-side"}, want: []string{`diff.style: "side-by-side"`}},
		{name: "bad ignore path", file: "diff:\n  ignorePaths: [status.x]\n", want: []string{"diff.ignorePaths", "JSON Pointer"}},
		{name: "safe Secret annotations of any tool", file: "diff:\n  redact:\n    safeSecretAnnotations: ['*/name']\n", want: []string{`diff.redact.safeSecretAnnotations: "*/name": write the key's prefix out`, "kubediff.yaml"}},
		{name: "every safe Secret annotation", file: "diff:\n  redact:\n    safeSecretAnnotations: ['*']\n", want: []string{`diff.redact.safeSecretAnnotations: "*"`}},
		{name: "malformed safe Secret annotation", file: "diff:\n  redact:\n    safeSecretAnnotations: ['example.com/[x']\n", want: []string{`diff.redact.safeSecretAnnotations: "example.com/[x": syntax error`}},
		{name: "malformed YAML", file: "output: [json\n", want: []string{"kubediff.yaml"}},
		{name: "missing file", args: []string{"--config", "/nonexistent/kubediff.yaml"}, want: []string{"/nonexistent/kubediff.yaml"}},
		{name: "bad flag value", args: []string{"-o", "yaml"}, want: []string{`output: "yaml"`}},
		{name: "bad env value", env: map[string]string{"KUBEDIFF_LOG_LEVEL": "loud"}, want: []string{`log.level: "loud"`}},
		{name: "unknown flag", args: []string{"--bogus"}, want: []string{"unknown flag: --bogus"}},
		{name: "several contexts, one elected", args: []string{"--context", "a", "--context", "b", "--leader-elect"}, want: []string{"leaderElection: elects a replica in one cluster"}},
		{name: "several contexts, one name", args: []string{"--context", "a", "--context", "b", "--cluster-name", "x"}, want: []string{"clusterName (--cluster-name) names one cluster"}},
		{name: "a context twice", file: "contexts: [a, b, a]\n", want: []string{`contexts: "a" is empty or given twice`}},
		{name: "all contexts and a context", args: []string{"--all-contexts", "--context", "a"}, want: []string{"allContexts (--all-contexts) and context (--context): choose one"}},
		{name: "pack rule misspelt key", file: "rulePack:\n  - {name: secret-deleted, namespace: [prod-*]}\n", want: []string{"rulePack[0]", "namespace", "kubediff.yaml"}},
		{name: "pack rule bad glob", file: "rulePack:\n  - {name: secret-deleted, namespaces: ['[prod']}\n", want: []string{"rulePack[secret-deleted].namespaces: syntax error", "kubediff.yaml"}},
		{name: "cluster match glob", file: "sinks:\n  - name: a\n    type: webhook\n    url: http://127.0.0.1:1/\n    match: {clusters: ['[prod']}\n", want: []string{"sinks[a].match.clusters: syntax error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := append([]string{"watch"}, tt.args...)
			if tt.file != "" {
				args = append(args, "--config", writeFile(t, tt.file))
			}
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), args, &stdout, &stderr)
			if code != exitUsage {
				t.Fatalf("exit code = %d, want %d; stderr: %s", code, exitUsage, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout must stay clean for records, got %q", stdout.String())
			}
		})
	}
}

func TestNoClusterIsAClearError(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"resources"}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "no cluster to talk to") {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
}

func TestExampleConfigIsValidAndComplete(t *testing.T) {
	path := filepath.Join("..", "..", "config.example.yaml")
	if err := checkConfigFile(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(t, "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	// Compared as printed, so an empty list equals an unset one.
	if fmt.Sprintf("%+v", cfg) != fmt.Sprintf("%+v", config.Default()) {
		t.Errorf("config.example.yaml should show the defaults:\n got %+v\nwant %+v", cfg, config.Default())
	}
	// Every key is documented in the example.
	data, _ := os.ReadFile(path)
	known := map[string]bool{}
	knownKeys(reflect.TypeFor[config.Config](), "", known)
	for key := range known {
		leaf := key[strings.LastIndex(key, ".")+1:]
		if !strings.Contains(strings.ToLower(string(data)), leaf+":") {
			t.Errorf("config.example.yaml does not document %s", key)
		}
	}
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "kubediff ") || !strings.Contains(stdout.String(), "commit") {
		t.Fatalf("version output = %q", stdout.String())
	}
}

// The commented sinks example in config.example.yaml is a valid config.
func TestExampleSinksAreValid(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(data), "# --- sinks example begin")
	block, _, found := strings.Cut(rest, "# --- sinks example end")
	if !found {
		t.Fatal("config.example.yaml has no sinks example")
	}
	var lines []string
	for _, line := range strings.Split(block, "\n")[1:] {
		lines = append(lines, strings.TrimPrefix(line, "# "))
	}
	dir := t.TempDir()
	for _, f := range []string{"hmac", "slack-token", "kafka/password"} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700)
		_ = os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600)
	}
	writeTLSFiles(t, filepath.Join(dir, "kafka"))
	example := strings.ReplaceAll(strings.Join(lines, "\n"), "/etc/kubediff", dir)
	cfg, err := load(t, "--config", writeFile(t, example))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Sinks) != len(sinktypes.Types) || cfg.Sinks[1].Match.Labels == "" || cfg.Sinks[0].Options["headers"].(map[string]any)["x-team"] != "platform" {
		t.Fatalf("sinks = %+v", cfg.Sinks)
	}
	for _, sc := range cfg.Sinks {
		typed, err := sc.Decode()
		if err == nil {
			_, err = typed.Build(slog.New(slog.NewTextHandler(io.Discard, nil)))
		}
		if err != nil {
			t.Errorf("sink %s: %v", sc.Name, err)
		}
	}
}

func TestBadSinkConfig(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"sinks:\n  - name: a\n    type: email\n", `sinks[a].type: "email"`},
		{"sinks:\n  - name: a\n    type: slack\n    channel: x\n", "sinks[a]: set exactly one of token, tokenFile"},
		{"sinks:\n  - type: webhook\n    url: http://x\n", "sinks[0].name: empty"},
		{"sinks:\n  - name: a\n    type: webhook\n    url: http://x\n    match: {types: [created]}\n", `sinks[a].match.types: "created"`},
		{"sinks:\n  - name: a\n    type: webhook\n    url: http://x\n    retries: 3\n", "retries"},
		// Found before any connection, naming the file (no cluster is configured here).
		{"sinks:\n  - name: a\n    type: webhook\n    url: ftp://x\n", "sinks[a].url: must be an absolute http or https URL"},
		{"sinks:\n  - name: a\n    type: webhook\n    url: http://x\n    timeout: 5parsecs\n", "sinks[a].timeout"},
		{"sinks:\n  - name: a\n    type: slack\n    tokenFile: /t\n    channel: c\n    url: http://x\n", "unknown keys for a slack sink: url"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), []string{"watch", "--config", writeFile(t, tt.file)}, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("config %q: exit %d, stderr %q; want exit 2 naming %q", tt.file, code, stderr.String(), tt.want)
		}
	}
}

// Every flag sets a config key (or is one of the few that are not config),
// so no flag is silently ignored.
func TestEveryFlagIsBound(t *testing.T) {
	notConfig := map[string]bool{"config": true, "all-namespaces": true, "format": true, "help": true}
	root := newRootCommand("kubediff", &bytes.Buffer{}, &bytes.Buffer{})
	known := map[string]bool{}
	knownKeys(reflect.TypeFor[config.Config](), "", known)
	for _, cmd := range root.Commands() {
		cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { checkFlag(t, cmd.Name(), f, notConfig, known) })
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) { checkFlag(t, cmd.Name(), f, notConfig, known) })
	}
}

func checkFlag(t *testing.T, cmd string, f *pflag.Flag, notConfig, known map[string]bool) {
	t.Helper()
	flag := f.Name
	if notConfig[flag] || isUnbound(f) {
		return
	}
	key, ok := flagKeys[flag]
	if !ok {
		t.Errorf("%s --%s is not bound to a config key", cmd, flag)
		return
	}
	if !known[strings.ToLower(key)] {
		t.Errorf("--%s is bound to %q, which is no config key", flag, key)
	}
}

// Every built-in rule is a config key, on by default, listed by
// `kubediff rules`, and can be turned off, also for some types only.
func TestEveryDefaultRuleIsAConfigKey(t *testing.T) {
	if got := config.Default().Diff.Defaults.Enabled(); !reflect.DeepEqual(got, diff.AllDefaults) {
		t.Fatalf("rules on by default = %v, want every rule %v", got, diff.AllDefaults)
	}
	file := writeFile(t, "diff:\n  defaults:\n    podLifecycle: false\n  defaultsOff:\n    - rules: [workloadStatus]\n      resources: [statefulsets.apps]\n")
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"rules", "--config", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, r := range diff.AllDefaults {
		if !strings.Contains(stdout.String(), r+" ") {
			t.Errorf("kubediff rules does not list %s:\n%s", r, stdout.String())
		}
	}
	for _, want := range []string{"podLifecycle        no", "workloadStatus      yes, not for statefulsets.apps"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("kubediff rules does not say %q:\n%s", want, stdout.String())
		}
	}
	bad := writeFile(t, "diff:\n  defaultsOff:\n    - rules: [podLifecycel]\n      resources: [pods]\n")
	stderr.Reset()
	if code := Run(context.Background(), []string{"watch", "--config", bad}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), `diff.defaultsOff[0].rules: "podLifecycel" is not one of`) {
		t.Errorf("a misspelt rule name: exit %d, want 2 naming it; stderr %s", code, stderr.String())
	}
}

// writeTLSFiles writes a self-signed certificate as ca.crt and tls.crt,
// and its key as tls.key, for the Kafka sink's example to read.
func writeTLSFiles(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubediff-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	for name, data := range map[string][]byte{"ca.crt": cert, "tls.crt": cert,
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
