package testenv

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubediff/kubediff/internal/testcert"
)

// AuditOptions are the audit flags of a kube-apiserver
// (StartAuditedAPIServer).
type AuditOptions struct {
	// PolicyFile is --audit-policy-file (required).
	PolicyFile string
	// WebhookConfigFile is --audit-webhook-config-file, empty for none;
	// BatchMaxWait its --audit-webhook-batch-max-wait (0: the server's).
	WebhookConfigFile string
	BatchMaxWait      time.Duration
	// LogPath is --audit-log-path, empty for none; LogMaxSizeMB its
	// --audit-log-maxsize, to make the server rotate it (0: never).
	LogPath      string
	LogMaxSizeMB int
	// Tokens are lines of --token-auth-file (token,user,uid,"groups"),
	// for users authenticated by a static token.
	Tokens []string
}

// StartAuditedAPIServer starts a kube-apiserver with the first one's
// flags (same etcd, certificates and users) and the audit flags of o, on
// another port, and waits until it is ready. Requests to it are audited;
// those to the first server are not.
func (e *Env) StartAuditedAPIServer(o AuditOptions) (*APIServer, error) {
	s, err := e.secondAPIServer(fmt.Sprintf("audited-%d", len(e.seconds)))
	if err != nil {
		return nil, err
	}
	s.args = append(s.args, "--audit-policy-file="+o.PolicyFile)
	if o.WebhookConfigFile != "" {
		s.args = append(s.args, "--audit-webhook-config-file="+o.WebhookConfigFile, "--audit-webhook-mode=batch")
		if o.BatchMaxWait > 0 {
			s.args = append(s.args, "--audit-webhook-batch-max-wait="+o.BatchMaxWait.String())
		}
	}
	if o.LogPath != "" {
		s.args = append(s.args, "--audit-log-path="+o.LogPath, "--audit-log-format=json")
		if o.LogMaxSizeMB > 0 {
			s.args = append(s.args, "--audit-log-maxsize="+strconv.Itoa(o.LogMaxSizeMB))
		}
	}
	if len(o.Tokens) > 0 {
		tokens := filepath.Join(e.dir, filepath.Base(s.Kubeconfig)+"-tokens.csv")
		if err := os.WriteFile(tokens, []byte(strings.Join(o.Tokens, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
		s.args = append(s.args, "--token-auth-file="+tokens)
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	e.seconds = append(e.seconds, s)
	return s, nil
}

// TokenConfig is a client configuration for s authenticating with a
// bearer token (a static token, a ServiceAccount's).
func (e *Env) TokenConfig(s *APIServer, token string) *rest.Config {
	return &rest.Config{Host: s.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: e.Config.CAData}, QPS: 100, Burst: 200}
}

// Pid is the server's process id, for measuring its CPU.
func (s *APIServer) Pid() int { return s.cmd.Process.Pid }

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
	made := map[string]*testcert.Pair{}
	for _, p := range pairs {
		pair, err := testcert.New(p.name, made[p.parent], p.ips...)
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

// WriteWebhookKubeconfig writes the kubeconfig the API server's
// --audit-webhook-config-file reads: the webhook's URL, the CA of its
// serving certificate, and the client certificate (when certFile is set)
// or the token (when token is) it authenticates with.
func WriteWebhookKubeconfig(path, url, caFile, certFile, keyFile, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubediff"] = &clientcmdapi.Cluster{Server: url, CertificateAuthority: caFile}
	cfg.AuthInfos["kube-apiserver"] = &clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: keyFile, Token: token}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "kubediff", AuthInfo: "kube-apiserver"}
	cfg.CurrentContext = "default"
	return clientcmd.WriteToFile(*cfg, path)
}
