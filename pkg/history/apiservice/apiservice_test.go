package apiservice

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubediff/kubediff/internal/testcert"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
)

// seen is what reached the history API behind the front proxy's check.
type seen struct {
	mu    sync.Mutex
	users []*authnv1.UserInfo
	paths []string
}

// ServeHTTP takes the caller as the history API does (Authenticate
// returns the user the front proxy vouched for, asking nothing of the
// API server) and answers 200.
func (s *seen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, err := historyapi.NewAccess(fake.NewClientset(), slog.New(slog.DiscardHandler)).Authenticate(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users, s.paths = append(s.users, user), append(s.paths, r.URL.Path)
}

func (s *seen) calls() ([]*authnv1.UserInfo, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*authnv1.UserInfo(nil), s.users...), append([]string(nil), s.paths...)
}

// frontProxyServer serves the aggregated API on 127.0.0.1 with real TLS,
// trusting the client certificates ca signs for the name
// "front-proxy-client", the request headers as kubeadm's API servers
// send them.
func frontProxyServer(t *testing.T, ca *testcert.Pair) (string, *seen) {
	t.Helper()
	fp := &FrontProxy{CAs: ca.Pool(), AllowedNames: []string{"front-proxy-client"},
		UserHeaders: []string{"X-Remote-User"}, GroupHeaders: []string{"X-Remote-Group"},
		UIDHeaders: []string{"X-Remote-Uid"}, ExtraPrefixes: []string{"X-Remote-Extra-"}}
	behind := &seen{}
	addr, stop, err := Serve("127.0.0.1:0", fp, behind, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return "https://" + addr, behind
}

// clientWith is an HTTPS client presenting cert (none when nil). It does
// not check kubediff's serving certificate, as the APIService does not
// (insecureSkipTLSVerify, as metrics-server's).
func clientWith(t *testing.T, cert *testcert.Pair) *http.Client {
	t.Helper()
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // kubediff's self-signed serving certificate
	if cert != nil {
		pair, err := cert.TLS()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func newPair(t *testing.T, name string, parent *testcert.Pair) *testcert.Pair {
	t.Helper()
	p, err := testcert.New(name, parent)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOnlyTheFrontProxyIsTrusted: the request headers naming the caller
// are believed only on a connection whose client certificate the
// requestheader CA signed for an allowed name; anything else is refused
// before the history API runs, however the headers read.
func TestOnlyTheFrontProxyIsTrusted(t *testing.T) {
	ca := newPair(t, "front-proxy-ca", nil)
	otherCA := newPair(t, "front-proxy-ca", nil) // same name, another key
	base, behind := frontProxyServer(t, ca)
	admin := http.Header{"X-Remote-User": {"alice"}, "X-Remote-Group": {"system:masters"}}
	for _, tc := range []struct {
		name   string
		cert   *testcert.Pair
		header http.Header
		// handshake: the TLS handshake may refuse the certificate
		// (a certificate given must verify) instead of a 401.
		handshake bool
	}{
		{"no client certificate", nil, admin, false},
		{"a certificate another CA signed", newPair(t, "front-proxy-client", otherCA), admin, true},
		{"a name the cluster does not allow", newPair(t, "someone-else", ca), admin, false},
		{"the front proxy naming no user", newPair(t, "front-proxy-client", ca), http.Header{"X-Remote-Group": {"system:masters"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, base+Prefix+"/records", nil)
			req.Header = tc.header
			resp, err := clientWith(t, tc.cert).Do(req)
			switch {
			case err != nil && !tc.handshake:
				t.Errorf("no answer (%v), want 401", err)
			case err == nil:
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("answered %s, want 401: %s", resp.Status, body)
				}
			}
			if users, _ := behind.calls(); len(users) > 0 {
				t.Errorf("the history API was reached as %+v", users)
			}
		})
	}
}

// TestTheFrontProxysCallerReachesTheHistory: through the front proxy's
// certificate, the user, uid, groups and extra its headers name are the
// caller the history API checks, and the path is the history API's.
func TestTheFrontProxysCallerReachesTheHistory(t *testing.T) {
	ca := newPair(t, "front-proxy-ca", nil)
	base, behind := frontProxyServer(t, ca)
	req, _ := http.NewRequest(http.MethodGet, base+Prefix+"/records?namespace=shop", nil)
	req.Header = http.Header{
		"X-Remote-User":                  {"alice"},
		"X-Remote-Uid":                   {"uid-1"},
		"X-Remote-Group":                 {"team-a", "system:authenticated"},
		"X-Remote-Extra-Scopes":          {"view"},
		"X-Remote-Extra-Acme.com%2fteam": {"payments"},
	}
	resp, err := clientWith(t, newPair(t, "front-proxy-client", ca)).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answered %s: %s", resp.Status, body)
	}
	users, paths := behind.calls()
	want := &authnv1.UserInfo{Username: "alice", UID: "uid-1", Groups: []string{"team-a", "system:authenticated"},
		Extra: map[string]authnv1.ExtraValue{"scopes": {"view"}, "acme.com/team": {"payments"}}}
	if len(users) != 1 || !reflect.DeepEqual(users[0], want) {
		t.Errorf("the history API saw %+v, want %+v", users, want)
	}
	if len(paths) != 1 || paths[0] != historyapi.RecordsPath {
		t.Errorf("the history API was asked for %v, want %s", paths, historyapi.RecordsPath)
	}
}
