// Package apiservice serves kubediff's history API as a Kubernetes
// aggregated API (history.kubediff.io/v1alpha1), as metrics-server serves
// metrics.k8s.io. The cluster's API server then authenticates each caller
// however the cluster does (client certificates as kind's kubeconfigs
// use, exec plugins, OIDC, tokens) and forwards the request with the
// caller's name and groups in headers, over a client certificate of its
// front proxy; kubediff trusts those headers only on a connection whose
// certificate the front-proxy CA signed and whose name the cluster allows
// (kube-system's extension-apiserver-authentication ConfigMap says both).
// What the caller may see is then checked as for any history request:
// a SubjectAccessReview per type and namespace.
package apiservice

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubediff/kubediff/pkg/history/historyapi"
)

// Group and Version name the aggregated API.
const (
	Group   = "history.kubediff.io"
	Version = "v1alpha1"
	// Prefix is the API's path on the API server, and on kubediff.
	Prefix = "/apis/" + Group + "/" + Version
)

// FrontProxy is what kubediff trusts of the API server's front proxy.
type FrontProxy struct {
	CAs            *x509.CertPool
	AllowedNames   []string // empty: any name the CA signed
	UserHeaders    []string
	GroupHeaders   []string
	UIDHeaders     []string
	ExtraPrefixes  []string // of the headers carrying the user's extra ("X-Remote-Extra-")
	authentication string   // the ConfigMap, for messages
}

// authConfigMap is where the API server publishes its request header
// settings; reading it needs the extension-apiserver-authentication-reader
// Role in kube-system.
const authConfigMap = "kube-system/extension-apiserver-authentication"

// LoadFrontProxy reads the front proxy's settings from the cluster.
func LoadFrontProxy(ctx context.Context, kube kubernetes.Interface) (*FrontProxy, error) {
	cm, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read %s (kubediff's ServiceAccount needs the extension-apiserver-authentication-reader Role there): %w", authConfigMap, err)
	}
	ca := cm.Data["requestheader-client-ca-file"]
	if ca == "" {
		return nil, fmt.Errorf("%s has no requestheader-client-ca-file: this API server does not forward to aggregated APIs", authConfigMap)
	}
	fp := &FrontProxy{CAs: x509.NewCertPool(), authentication: authConfigMap}
	if !fp.CAs.AppendCertsFromPEM([]byte(ca)) {
		return nil, fmt.Errorf("%s: requestheader-client-ca-file holds no certificate", authConfigMap)
	}
	for key, into := range map[string]*[]string{
		"requestheader-allowed-names":        &fp.AllowedNames,
		"requestheader-username-headers":     &fp.UserHeaders,
		"requestheader-group-headers":        &fp.GroupHeaders,
		"requestheader-uid-headers":          &fp.UIDHeaders,
		"requestheader-extra-headers-prefix": &fp.ExtraPrefixes,
	} {
		if v := cm.Data[key]; v != "" {
			if err := json.Unmarshal([]byte(v), into); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", authConfigMap, key, err)
			}
		}
	}
	if len(fp.UserHeaders) == 0 {
		return nil, fmt.Errorf("%s names no requestheader-username-headers", authConfigMap)
	}
	return fp, nil
}

// TLSConfig makes a listener ask for client certificates and verify those
// given against the front-proxy CA; serving is cert.
func (fp *FrontProxy) TLSConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: fp.CAs, MinVersion: tls.VersionTLS12}
}

// errNotTheFrontProxy is a request that did not come through the API
// server: anyone may open a connection to kubediff's port.
var errNotTheFrontProxy = errors.New("unauthenticated: this address serves the Kubernetes API server's front proxy only; ask through the API server (kubediff history --via-apiserver)")

// User returns who the API server says sent r.
func (fp *FrontProxy) User(r *http.Request) (*authnv1.UserInfo, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return nil, errNotTheFrontProxy
	}
	name := r.TLS.VerifiedChains[0][0].Subject.CommonName
	if len(fp.AllowedNames) > 0 && !slices.Contains(fp.AllowedNames, name) {
		return nil, errNotTheFrontProxy
	}
	user := &authnv1.UserInfo{}
	for _, h := range fp.UserHeaders {
		if user.Username = r.Header.Get(h); user.Username != "" {
			break
		}
	}
	if user.Username == "" {
		return nil, errNotTheFrontProxy
	}
	for _, h := range fp.GroupHeaders {
		user.Groups = append(user.Groups, r.Header.Values(h)...)
	}
	for _, h := range fp.UIDHeaders {
		if user.UID = r.Header.Get(h); user.UID != "" {
			break
		}
	}
	user.Extra = fp.extra(r.Header)
	return user, nil
}

// extra reads the user's extra from the headers the front proxy names
// them by (prefix and key, the key path-escaped), as the API server
// sends them: access reviews then ask about the whole identity.
func (fp *FrontProxy) extra(h http.Header) map[string]authnv1.ExtraValue {
	var out map[string]authnv1.ExtraValue
	for name, values := range h {
		for _, prefix := range fp.ExtraPrefixes {
			key, ok := strings.CutPrefix(strings.ToLower(name), strings.ToLower(prefix))
			if !ok || key == "" {
				continue
			}
			if unescaped, err := url.PathUnescape(key); err == nil {
				key = unescaped
			}
			if out == nil {
				out = map[string]authnv1.ExtraValue{}
			}
			out[key] = append(out[key], values...)
		}
	}
	return out
}

// Handler serves the aggregated API from the history API's handlers in
// api, for callers the front proxy vouches for.
func (fp *FrontProxy) Handler(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := fp.User(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, Prefix)
		switch {
		case !ok || r.Method != http.MethodGet:
			http.NotFound(w, r)
		case rest == "" || rest == "/":
			historyapi.WriteJSON(w, discovery())
		default:
			r = r.Clone(historyapi.WithUser(r.Context(), user))
			r.URL.Path = historyapi.BasePath + rest
			api.ServeHTTP(w, r)
		}
	})
}

// discovery is the API's resource list, which the API server reads to
// know the APIService is available.
func discovery() *metav1.APIResourceList {
	list := &metav1.APIResourceList{GroupVersion: Group + "/" + Version}
	list.Kind, list.APIVersion = "APIResourceList", "v1"
	for _, name := range []string{"records", "object", "types", "diff", "blame", "restore"} {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: name, Kind: "History", Verbs: metav1.Verbs{"get", "list"}})
	}
	return list
}

// Serve listens on addr with a self-signed serving certificate (the
// APIService says insecureSkipTLSVerify, as metrics-server's does: the
// caller's identity rides on the front proxy's client certificate, which
// kubediff verifies) and serves handler until stop is called. It returns
// the address it listens on.
func Serve(addr string, fp *FrontProxy, handler http.Handler, log *slog.Logger) (string, func(), error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("kubediff", nil, []string{"localhost"})
	if err != nil {
		return "", nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("apiService.address %s: %w", addr, err)
	}
	srv := &http.Server{Handler: fp.Handler(handler), TLSConfig: fp.TLSConfig(cert), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)} // TLS handshakes of port scanners are no news
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("aggregated API server stopped", "err", err)
		}
	}()
	log.Info("serving the history as the aggregated API "+Group+"/"+Version, "address", ln.Addr().String())
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
