package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testcert"
	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/identity/identitytest"
)

// With admissionObserver.address set, the program's identity sources
// serve the admission observer, which notes the writes posted to it; a
// certificate that cannot be read fails the start naming the key; not
// configured, nothing listens.
func TestIdentitySourcesServeTheAdmissionObserver(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, certPEM, err := testcert.LoopbackFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("the-api-servers-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.AdmissionObserver = config.AdmissionObserverConfig{Address: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, TokenFile: tokenFile}
	var logs bytes.Buffer
	notes := &identitytest.Recorder{}
	stop, err := startIdentitySources(context.Background(), cfg, notes, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	addr := regexp.MustCompile(`address=(\S+)`).FindStringSubmatch(logs.String())
	if addr == nil {
		t.Fatalf("the observer did not say where it listens:\n%s", logs.String())
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"r1","operation":"DELETE",
		"resource":{"version":"v1","resource":"configmaps"},"namespace":"a","name":"c","userInfo":{"username":"alice"},
		"oldObject":{"metadata":{"uid":"u","resourceVersion":"3"}}}}`
	resp, err := client.Post("https://"+addr[1]+"/observe/the-api-servers-token", "application/json", strings.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	noted := notes.All()
	if resp.StatusCode != http.StatusOK || len(noted) != 1 || noted[0].User.Name != "alice" || noted[0].PreviousResourceVersion != "3" {
		t.Fatalf("status %d, noted %+v", resp.StatusCode, noted)
	}

	broken := cfg
	broken.AdmissionObserver.CertFile = filepath.Join(dir, "missing.crt")
	if _, err := startIdentitySources(context.Background(), broken, notes, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "admissionObserver.certFile") {
		t.Errorf("a missing certificate: %v, want an error naming admissionObserver.certFile", err)
	}
	logs.Reset()
	none, err := startIdentitySources(context.Background(), config.Default(), notes, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || logs.Len() != 0 {
		t.Errorf("not configured: %v, logged %q", err, logs.String())
	}
	none()
}
