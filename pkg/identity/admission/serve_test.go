package admission

import (
	"bytes"
	"crypto/x509"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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
// believes a caller with a client certificate its client CA signed, no
// other; what it
// cannot read, or an observer with no way to authenticate its caller,
// fails the start naming the key.
func TestServeOverTLS(t *testing.T) {
	files, err := testcert.NewAuditTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	notes := &identitytest.Recorder{}
	opts := Options{Address: "127.0.0.1:0", CertFile: files.ServingCert, KeyFile: files.ServingKey, ClientCAFile: files.ClientCA}
	addr, stop, err := Serve(opts, notes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	body := review(`{"uid":"r1","operation":"DELETE","resource":{"version":"v1","resource":"configmaps"},"namespace":"a","name":"c",` + alice + `,"oldObject":{"metadata":{"uid":"u","resourceVersion":"3"}}}`)
	send := func(client *http.Client) (int, string, error) {
		resp, err := client.Post("https://"+addr+Path, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		return resp.StatusCode, buf.String(), nil
	}
	if code, got, err := send(testcert.Client(t, files.ServingCA, files.ClientCert, files.ClientKey)); err != nil || code != http.StatusOK || !strings.Contains(got, `"allowed":true`) || len(notes.All()) != 1 {
		t.Fatalf("the API server's certificate: status %d, body %s, err %v, notes %+v", code, got, err, notes.All())
	}
	if code, _, err := send(testcert.Client(t, files.ServingCA, "", "")); err != nil || code != http.StatusUnauthorized {
		t.Errorf("no client certificate: status %d, err %v; want 401", code, err)
	}
	// Go's client offers no certificate the server's CAs did not sign: 401.
	if code, _, err := send(testcert.Client(t, files.ServingCA, files.StrangerCert, files.StrangerKey)); err == nil && code != http.StatusUnauthorized {
		t.Errorf("a stranger's certificate: status %d, want it refused", code)
	}
	if len(notes.All()) != 1 {
		t.Errorf("strangers' reviews were noted: %+v", notes.All()[1:])
	}

	certFile, keyFile, token := files.ServingCert, files.ServingKey, files.TokenFile
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Address: "127.0.0.1:0", CertFile: certFile, TokenFile: token}, "admissionObserver.certFile and admissionObserver.keyFile"},
		{Options{Address: "127.0.0.1:0", CertFile: filepath.Join(t.TempDir(), "none.crt"), KeyFile: keyFile, TokenFile: token}, "admissionObserver.certFile (--admission-observer-cert-file)"},
		{Options{Address: "127.0.0.1:0", CertFile: keyFile, KeyFile: certFile, TokenFile: token}, "admissionObserver.certFile and keyFile"},
		{Options{Address: addr, CertFile: certFile, KeyFile: keyFile, TokenFile: token}, "admissionObserver.address (--admission-observer-address)"},
		{Options{Address: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile}, "needs admissionObserver.clientCAFile or admissionObserver.tokenFile"},
		{Options{Address: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, TokenFile: filepath.Join(t.TempDir(), "none")}, "admissionObserver.tokenFile (--admission-observer-token-file)"},
		{Options{Address: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, ClientCAFile: keyFile}, "admissionObserver.clientCAFile (--admission-observer-client-ca-file)"},
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

// A thousand strangers' posts (reviews of 8 MiB naming someone, 32 KiB
// of headers) cost kubediff no more than their headers: each is refused
// before its body is read, nothing is noted, and the heap in use stays
// under 128 MiB while twenty of them post at once (reading the bodies
// would hold at least 20 × 8 MiB, and noting them, as before, 2.78 GB
// for 600). A header over the bound is refused.
func TestAThousandStrangersCostLittle(t *testing.T) {
	files, err := testcert.NewAuditTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	notes := &identitytest.Recorder{}
	addr, stop, err := Serve(Options{Address: "127.0.0.1:0", CertFile: files.ServingCert, KeyFile: files.ServingKey, TokenFile: files.TokenFile},
		notes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := testcert.Client(t, files.ServingCA, "", "")
	pad := strings.Repeat("p", MaxReviewBytes-1024)
	body := []byte(review(`{"uid":"x","operation":"DELETE","resource":{"version":"v1","resource":"configmaps"},"name":"c",` + alice + `,"oldObject":{"metadata":{"uid":"u","resourceVersion":"3"}},"pad":"` + pad + `"}`))
	post := func(header string) int {
		req, _ := http.NewRequest(http.MethodPost, "https://"+addr+Path+"/guess", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+header)
		resp, err := client.Do(req)
		if err != nil {
			return 0 // the server may close a connection whose body it did not read
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	peak := watchHeap(t)
	var wg sync.WaitGroup
	codes := make(chan int, 1000)
	for range 20 {
		wg.Go(func() {
			for range 50 {
				codes <- post(strings.Repeat("h", 32<<10))
			}
		})
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusUnauthorized && code != 0 {
			t.Fatalf("a stranger's post answered %d, want 401", code)
		}
	}
	if len(notes.All()) != 0 {
		t.Fatalf("strangers' posts noted %d writes", len(notes.All()))
	}
	if mib := peak() >> 20; mib > 128 {
		t.Errorf("the heap in use peaked at %d MiB under 1,000 strangers' posts; want under 128 MiB", mib)
	} else {
		t.Logf("the heap in use peaked at %d MiB under 1,000 strangers' posts of 8 MiB", mib)
	}
	if code := post(strings.Repeat("h", 900<<10)); code != http.StatusRequestHeaderFieldsTooLarge && code != 0 {
		t.Errorf("900 KB of headers answered %d, want 431", code)
	}
}

// watchHeap samples the heap in use until the test ends; the function it
// returns is the highest seen so far.
func watchHeap(t *testing.T) func() uint64 {
	var mu sync.Mutex
	var highest uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		mu.Lock()
		highest = max(highest, m.HeapInuse)
		mu.Unlock()
	}
	go func() {
		defer close(stopped)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	return func() uint64 {
		sample()
		mu.Lock()
		defer mu.Unlock()
		return highest
	}
}
