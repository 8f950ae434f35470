package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kubediff/kubediff/pkg/config"
)

// The admission observer's flags and config keys set the same settings,
// and an address without a certificate or without a way to authenticate
// the API server, or a certificate without an address, is a usage error
// naming the keys.
func TestAdmissionObserverFlags(t *testing.T) {
	want := config.AdmissionObserverConfig{Address: ":9443", CertFile: "/tls/tls.crt", KeyFile: "/tls/tls.key", ClientCAFile: "/ca/ca.crt", TokenFile: "/token/token"}
	fromFlags, err := load(t, "--admission-observer-address", ":9443", "--admission-observer-cert-file", "/tls/tls.crt", "--admission-observer-key-file", "/tls/tls.key",
		"--admission-observer-client-ca-file", "/ca/ca.crt", "--admission-observer-token-file", "/token/token")
	if err != nil || fromFlags.AdmissionObserver != want {
		t.Errorf("flags: %+v, %v; want %+v", fromFlags.AdmissionObserver, err, want)
	}
	file := writeFile(t, "admissionObserver:\n  address: \":9443\"\n  certFile: /tls/tls.crt\n  keyFile: /tls/tls.key\n  clientCAFile: /ca/ca.crt\n  tokenFile: /token/token\n")
	fromFile, err := load(t, "--config", file)
	if err != nil || fromFile.AdmissionObserver != want {
		t.Errorf("config file: %+v, %v; want %+v", fromFile.AdmissionObserver, err, want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--admission-observer-address", ":9443"}, "admissionObserver.address (--admission-observer-address) needs admissionObserver.certFile and admissionObserver.keyFile"},
		{[]string{"--admission-observer-address", ":9443", "--admission-observer-cert-file", "/tls/tls.crt"}, "needs admissionObserver.certFile and admissionObserver.keyFile"},
		{[]string{"--admission-observer-cert-file", "/tls/tls.crt", "--admission-observer-key-file", "/tls/tls.key"}, "admissionObserver.address (--admission-observer-address) is not"},
		{[]string{"--admission-observer-address", "9443", "--admission-observer-cert-file", "c", "--admission-observer-key-file", "k", "--admission-observer-token-file", "t"}, `admissionObserver.address (--admission-observer-address): "9443" is not host:port`},
		{[]string{"--admission-observer-address", ":9443", "--admission-observer-cert-file", "c", "--admission-observer-key-file", "k"}, "needs admissionObserver.clientCAFile or admissionObserver.tokenFile (--admission-observer-client-ca-file, --admission-observer-token-file)"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), append([]string{"watch"}, tc.args...), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("watch %s: exit %d, stderr %q; want exit %d saying %q", strings.Join(tc.args, " "), code, stderr.String(), exitUsage, tc.want)
		}
	}
}
