package admission

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/kubediff/kubediff/internal/testcert"
	"github.com/kubediff/kubediff/pkg/identity/identitytest"
)

// writeKeyPair writes a fresh serving certificate for 127.0.0.1 into dir
// and returns a pool trusting it.
func writeKeyPair(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	certFile, keyFile, certPEM, err := testcert.LoopbackFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, pool
}

// The observer answers over TLS with the certificate it was given, and
// a certificate it cannot read fails the start naming the key.
func TestServeOverTLS(t *testing.T) {
	certFile, keyFile, pool := writeKeyPair(t, t.TempDir())
	notes := &identitytest.Recorder{}
	addr, stop, err := Serve(Options{Address: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile}, notes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	body := review(`{"uid":"r1","operation":"DELETE","resource":{"version":"v1","resource":"configmaps"},"namespace":"a","name":"c",` + alice + `,"oldObject":{"metadata":{"uid":"u","resourceVersion":"3"}}}`)
	resp, err := client.Post("https://"+addr+Path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(buf.String(), `"allowed":true`) || len(notes.All()) != 1 {
		t.Fatalf("status %d, body %s, notes %+v", resp.StatusCode, buf.String(), notes.All())
	}

	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Address: "127.0.0.1:0", CertFile: certFile}, "admissionObserver.certFile and admissionObserver.keyFile"},
		{Options{Address: "127.0.0.1:0", CertFile: filepath.Join(t.TempDir(), "none.crt"), KeyFile: keyFile}, "admissionObserver.certFile (--admission-observer-cert-file)"},
		{Options{Address: "127.0.0.1:0", CertFile: keyFile, KeyFile: certFile}, "admissionObserver.certFile and keyFile"},
		{Options{Address: addr, CertFile: certFile, KeyFile: keyFile}, "admissionObserver.address (--admission-observer-address)"},
	} {
		if _, stop, err := Serve(tc.opts, notes, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), tc.want) {
			if err == nil {
				stop()
			}
			t.Errorf("%+v: err %v, want one naming %s", tc.opts, err, tc.want)
		}
	}
}

// A renewed certificate (a Secret's files replaced) is served without a
// restart; files that no longer load keep the last good pair.
func TestCertificateReloads(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := writeKeyPair(t, dir)
	c, err := loadCertificate(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c.every = 0
	first, _ := c.get(nil)
	// A later modification time, as the kubelet's swap of a Secret's files gives.
	renew := func(certPEM, keyPEM []byte) {
		t.Helper()
		later := time.Now().Add(time.Minute)
		for file, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(file, later, later); err != nil {
				t.Fatal(err)
			}
		}
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	renew(certPEM, keyPEM)
	second, _ := c.get(nil)
	if bytes.Equal(first.Certificate[0], second.Certificate[0]) {
		t.Fatal("the renewed certificate was not loaded")
	}
	renew([]byte("not a certificate"), keyPEM)
	if third, _ := c.get(nil); third != second {
		t.Fatal("a broken renewal should keep the last good certificate")
	}
}
