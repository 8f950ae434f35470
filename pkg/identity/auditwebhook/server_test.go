package auditwebhook

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testcert"
	"github.com/kubediff/kubediff/internal/testsync"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/identitytest"
)

// stuckNoter is a Noter whose every Note waits until it is closed.
type stuckNoter chan struct{}

func (s stuckNoter) Note(identity.Write) { <-s }

func startServer(t *testing.T, files *testcert.AuditTLS, notes identity.Noter, edit func(*Config)) *Server {
	t.Helper()
	cfg := Config{Address: "127.0.0.1:0", CertFile: files.ServingCert, KeyFile: files.ServingKey, ClientCAFile: files.ClientCA, TokenFile: files.TokenFile}
	if edit != nil {
		edit(&cfg)
	}
	s, err := Start(cfg, notes, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// client trusts the serving CA and presents certFile's certificate when
// it is set.
func client(t *testing.T, files *testcert.AuditTLS, certFile, keyFile string) *http.Client {
	t.Helper()
	return testcert.Client(t, files.ServingCA, certFile, keyFile)
}

// batch is an EventList of one scale of shop/web, made now.
func batch(t *testing.T, auditID, rv string) []byte {
	t.Helper()
	ev := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "auditID": auditID,
		"stage": "ResponseComplete", "requestURI": "/apis/apps/v1/namespaces/shop/deployments/web/scale", "verb": "update",
		"user":           map[string]any{"username": "alice"},
		"objectRef":      map[string]any{"resource": "deployments", "namespace": "shop", "name": "web", "apiGroup": "apps", "subresource": "scale"},
		"responseStatus": map[string]any{"code": 200},
		"responseObject": map[string]any{"kind": "Scale", "metadata": map[string]any{"name": "web", "uid": "u-web", "resourceVersion": rv}},
		"stageTimestamp": time.Now().UTC().Format(time.RFC3339Nano)}
	b, err := json.Marshal(map[string]any{"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "items": []any{ev}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func post(t *testing.T, c *http.Client, s *Server, token string, body []byte) (int, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://"+s.Addr()+"/audit", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestOnlyTheAPIServerMayPost(t *testing.T) {
	files, err := testcert.NewAuditTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	notes := &identitytest.Recorder{}
	s := startServer(t, files, notes, nil)
	anonymous := client(t, files, "", "")
	for _, tc := range []struct {
		name   string
		client *http.Client
		token  string
		want   int
	}{
		{"no certificate, no token", anonymous, "", http.StatusUnauthorized},
		{"a wrong token", anonymous, "guess", http.StatusUnauthorized},
		{"a token one byte short", anonymous, files.Token[:len(files.Token)-1], http.StatusUnauthorized},
		{"the token", anonymous, files.Token, http.StatusOK},
		{"a certificate the client CA signed", client(t, files, files.ClientCert, files.ClientKey), "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, err := post(t, tc.client, s, tc.token, batch(t, tc.name, tc.name))
			if err != nil || code != tc.want {
				t.Fatalf("answered %d (%v), want %d", code, err, tc.want)
			}
		})
	}
	t.Run("a certificate no configured CA signed", func(t *testing.T) {
		// Go's client sends no certificate the server's CAs did not sign.
		if code, err := post(t, client(t, files, files.StrangerCert, files.StrangerKey), s, "", batch(t, "stranger", "1")); err == nil && code != http.StatusUnauthorized {
			t.Fatalf("answered %d, want 401 or the TLS handshake refused", code)
		}
	})
	testsync.Eventually(t, "the two accepted posts to be noted", 30*time.Second, func() bool { return len(notes.All()) == 2 })
	for _, w := range notes.All() {
		if w.ResourceVersion != "the token" && w.ResourceVersion != "a certificate the client CA signed" {
			t.Errorf("noted a refused post: %+v", w)
		}
	}
}

// The API server retries a batch it thinks failed; a stranger holding
// the token could replay one: each event is noted once.
func TestAReplayedBatchIsNotedOnce(t *testing.T) {
	files, err := testcert.NewAuditTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	notes := &identitytest.Recorder{}
	s := startServer(t, files, notes, nil)
	c := client(t, files, "", "")
	body := batch(t, "id-1", "10")
	for range 3 {
		if code, err := post(t, c, s, files.Token, body); err != nil || code != http.StatusOK {
			t.Fatalf("answered %d (%v), want 200", code, err)
		}
	}
	if code, _ := post(t, c, s, files.Token, batch(t, "id-2", "11")); code != http.StatusOK {
		t.Fatalf("answered %d, want 200", code)
	}
	testsync.Eventually(t, "the second event to be noted", 30*time.Second, func() bool { return len(notes.All()) >= 2 })
	if got := notes.All(); len(got) != 2 || got[0].ResourceVersion != "10" || got[1].ResourceVersion != "11" {
		t.Fatalf("noted %+v, want id-1's write once then id-2's", got)
	}
}

func TestBadPosts(t *testing.T) {
	files, err := testcert.NewAuditTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, files, &identitytest.Recorder{}, func(c *Config) { c.MaxBodyBytes = 4096 })
	c := client(t, files, "", "")
	big := batch(t, string(bytes.Repeat([]byte("x"), 8192)), "1")
	if code, _ := post(t, c, s, files.Token, big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a post over the bound answered %d, want 413", code)
	}
	if code, _ := post(t, c, s, files.Token, []byte(`{"items":[{`)); code != http.StatusBadRequest {
		t.Errorf("a broken post answered %d, want 400", code)
	}
	resp, err := c.Get("https://" + s.Addr() + "/audit")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("a GET answered %d, want 405", resp.StatusCode)
	}
}

// The API server waits for each batch's answer before sending the next:
// a Noter that does not return must not hold it up.
func TestPostsAreAnsweredWhateverTheNoterDoes(t *testing.T) {
	files, err := testcert.NewAuditTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stuck := make(stuckNoter)
	s := startServer(t, files, stuck, nil)
	defer close(stuck) // before Stop (a cleanup) waits for the queue
	c := client(t, files, "", "")
	for i := range 5 {
		id := string(rune('a' + i))
		if code, err := post(t, c, s, files.Token, batch(t, id, id)); err != nil || code != http.StatusOK {
			t.Fatalf("post %d answered %d (%v) while the Noter is stuck, want 200", i, code, err)
		}
	}
}

func TestStartNamesTheKeyAtFault(t *testing.T) {
	files, err := testcert.NewAuditTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	empty := files.TokenFile + ".empty"
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.CertFile = "/nonexistent.crt" }, "audit.webhook.certFile"},
		{func(c *Config) { c.ClientCAFile = files.ServingKey }, "audit.webhook.clientCAFile"},
		{func(c *Config) { c.TokenFile = empty }, "audit.webhook.tokenFile " + empty + " is empty"},
		{func(c *Config) { c.Address = "127.0.0.1:notaport" }, "audit.webhook.address"},
	} {
		cfg := Config{Address: "127.0.0.1:0", CertFile: files.ServingCert, KeyFile: files.ServingKey, ClientCAFile: files.ClientCA, TokenFile: files.TokenFile}
		tc.edit(&cfg)
		s, err := Start(cfg, &identitytest.Recorder{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			s.Stop()
			t.Errorf("started; want an error naming %s", tc.want)
			continue
		}
		if !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("error %q does not name %s", err, tc.want)
		}
	}
}
