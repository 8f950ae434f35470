package sinks_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/notify/notifytest"
	"github.com/kubediff/kubediff/pkg/notify/sinks"
)

// Secrets every sink type is configured with in the leak test.
const (
	canaryToken    = "tok-canary-77aa"
	canaryPassword = "pw-canary-88bb"
	canaryHMAC     = "hmac-canary-99cc"
	// canaryPath stands for the secret Slack, Discord and Teams incoming
	// webhooks carry in their URL's path.
	canaryPath = "path-canary-66dd"
)

// leakOptions are, per sink type (and "type/variant" for another way a
// type can be set up), its keys carrying every kind of secret it takes,
// for a receiver at base (a URL with credentials added). A new sink type
// needs an entry: the test fails without one.
var leakOptions = map[string]func(base string) map[string]any{
	"webhook": func(base string) map[string]any {
		return map[string]any{"url": base + "/hooks/" + canaryPath + "?token=" + canaryToken, "secret": canaryHMAC,
			"headers": map[string]any{"Authorization": "Bearer " + canaryToken}}
	},
	"otlp": func(base string) map[string]any {
		return map[string]any{"endpoint": base + "/" + canaryPath + "/?token=" + canaryToken, "headers": map[string]any{"Authorization": "Bearer " + canaryToken}}
	},
	// gRPC takes the endpoint another way: through the SDK's gRPC client.
	"otlp/grpc": func(base string) map[string]any {
		return map[string]any{"endpoint": base + "/" + canaryPath + "/?token=" + canaryToken, "protocol": "grpc",
			"headers": map[string]any{"Authorization": "Bearer " + canaryToken}}
	},
	// A Kafka client speaking to an HTTP server fails as against a broker
	// that is not one; the SASL password is its secret.
	"kafka": func(base string) map[string]any {
		broker := base
		if u, err := url.Parse(base); err == nil {
			broker = u.Host
		}
		return map[string]any{"brokers": []any{broker}, "topic": "changes", "timeout": "1s",
			"sasl": map[string]any{"mechanism": "SCRAM-SHA-512", "username": "kubediff", "password": canaryPassword}}
	},
	"slack": func(base string) map[string]any {
		return map[string]any{"token": canaryToken, "channel": "#changes", "apiURL": base + "/" + canaryPath + "/api/?token=" + canaryToken}
	},
}

func TestNoSinkLeaksASecret(t *testing.T) {
	// A receiver's error may quote the request, as Express's "Cannot POST
	// /path" does: the URL's path and query must not reach a log through it.
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream is down for "+r.URL.RequestURI(), http.StatusBadGateway)
	}))
	t.Cleanup(failing.Close)
	withCredentials := func(u string) string {
		return strings.Replace(u, "http://", "http://user:"+canaryPassword+"@", 1)
	}
	receivers := map[string]string{
		"server error":       withCredentials(failing.URL),
		"refused connection": withCredentials("http://127.0.0.1:1"),
		"malformed URL":      withCredentials("http://[::1"),
	}
	for _, typ := range sinks.Types {
		if _, ok := leakOptions[typ.Name]; !ok {
			t.Errorf("sink type %s has no leak test: add its secret-carrying keys to leakOptions", typ.Name)
		}
	}
	for variant, options := range leakOptions {
		typ, _, _ := strings.Cut(variant, "/")
		for name, base := range receivers {
			t.Run(variant+"/"+name, func(t *testing.T) {
				sc, err := config.SinkEntry{Name: "leak", Type: typ, Options: options(base)}.Decode()
				if err != nil {
					t.Fatal(err)
				}
				notifytest.AssertNoSecretLeak(t, sc, canaryToken, canaryPassword, canaryHMAC, canaryPath)
			})
		}
	}
}

// commonKeys are the keys every sink entry has (config.SinkEntry).
var commonKeys = []string{"name", "type", "match", "queueSize", "queueMaxBytes"}

// typeKeys returns a sink type's own keys, from its config's tags.
func typeKeys(t *testing.T, name string) []string {
	t.Helper()
	typ, _ := sinks.Lookup(name)
	rt := reflect.TypeOf(typ.NewConfig()).Elem()
	var keys []string
	for i := range rt.NumField() {
		if tag := rt.Field(i).Tag.Get("mapstructure"); tag != "" {
			keys = append(keys, tag)
		}
	}
	return keys
}

// The commented example in config.example.yaml shows every key of every
// sink type (as a key, or in a comment offering it instead of another).
func TestConfigExampleShowsEverySinkKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	example, _, _ := strings.Cut(string(data), "# --- sinks example end")
	entries := strings.Split(example, "- name:")
	for _, typ := range sinks.Types {
		i := slices.IndexFunc(entries, func(e string) bool { return strings.Contains(e, "type: "+typ.Name+"\n") })
		if i < 0 {
			t.Errorf("config.example.yaml has no %s sink", typ.Name)
			continue
		}
		for _, key := range typeKeys(t, typ.Name) {
			if !strings.Contains(entries[i], " "+key+":") {
				t.Errorf("config.example.yaml: the %s sink does not show %s", typ.Name, key)
			}
		}
	}
}

// The sink keys table in docs/sinks.md lists exactly the keys each type has.
func TestDocsListEverySinkKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "sinks.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, found := strings.Cut(string(data), "<!-- sink keys: checked by pkg/notify/sinks tests -->")
	if !found {
		t.Fatal("docs/sinks.md has no sink keys table")
	}
	documented := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		typ, key := strings.TrimSpace(cells[1]), strings.Trim(strings.TrimSpace(cells[2]), "`")
		documented[typ] = append(documented[typ], key)
	}
	if got := documented["every sink"]; !slices.Equal(got, commonKeys) {
		t.Errorf("docs/sinks.md lists %v for every sink, want %v", got, commonKeys)
	}
	for _, typ := range sinks.Types {
		want := typeKeys(t, typ.Name)
		if got := documented[typ.Name]; !slices.Equal(got, want) {
			t.Errorf("docs/sinks.md lists %v for %s sinks, want %v (in the order of its Config)", got, typ.Name, want)
		}
	}
}
