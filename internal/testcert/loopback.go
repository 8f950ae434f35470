package testcert

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
)

// LoopbackFiles writes a fresh self-signed serving certificate for
// 127.0.0.1 and its key into dir as tls.crt and tls.key, readable by
// their owner only, as a webhook the local API server calls serves
// them. It returns the two paths and the certificate's PEM, which is
// the CA bundle that trusts it.
func LoopbackFiles(dir string) (certFile, keyFile string, certPEM []byte, err error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return "", "", nil, fmt.Errorf("certificate for 127.0.0.1: %w", err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for file, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return "", "", nil, err
		}
	}
	return certFile, keyFile, certPEM, nil
}
