package testenv

import (
	"fmt"
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

// AuditTLS are the files of an audit webhook's TLS (testcert.AuditTLS).
type AuditTLS = testcert.AuditTLS

// NewAuditTLS writes the audit webhook's TLS files in dir
// (testcert.NewAuditTLS).
func NewAuditTLS(dir string) (*AuditTLS, error) { return testcert.NewAuditTLS(dir) }

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
