package testcert

import (
	"net"
	"os"
	"path/filepath"
)

// AuditTLS are the files of an audit webhook's TLS: the serving
// certificate (for 127.0.0.1) and the CA the API server trusts it by, a
// client CA and the API server's client certificate it signed, another
// client certificate no configured CA signed, and a token file.
type AuditTLS struct {
	ServingCA, ServingCert, ServingKey string
	ClientCA, ClientCert, ClientKey    string
	StrangerCert, StrangerKey          string
	TokenFile, Token                   string
}

// NewAuditTLS writes the audit webhook's TLS files in dir.
func NewAuditTLS(dir string) (*AuditTLS, error) {
	file := func(name string) string { return filepath.Join(dir, name) }
	a := &AuditTLS{ServingCA: file("audit-serving-ca.crt"), ServingCert: file("audit-serving.crt"), ServingKey: file("audit-serving.key"),
		ClientCA: file("audit-client-ca.crt"), ClientCert: file("kube-apiserver-audit.crt"), ClientKey: file("kube-apiserver-audit.key"),
		StrangerCert: file("stranger.crt"), StrangerKey: file("stranger.key"), TokenFile: file("audit-token"), Token: "t0k3n-for-the-audit-webhook"}
	pairs := []struct {
		name   string
		parent string
		ips    []net.IP
	}{
		{"audit-serving-ca", "", nil}, {"audit-serving", "audit-serving-ca", []net.IP{net.IPv4(127, 0, 0, 1)}},
		{"audit-client-ca", "", nil}, {"kube-apiserver-audit", "audit-client-ca", nil},
		{"stranger-ca", "", nil}, {"stranger", "stranger-ca", nil},
	}
	made := map[string]*Pair{}
	for _, p := range pairs {
		pair, err := New(p.name, made[p.parent], p.ips...)
		if err != nil {
			return nil, err
		}
		if err := pair.WriteFiles(dir, p.name); err != nil {
			return nil, err
		}
		made[p.name] = pair
	}
	return a, os.WriteFile(a.TokenFile, []byte(a.Token+"\n"), 0o600)
}
