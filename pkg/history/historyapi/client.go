package historyapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/blame"
	"github.com/kubediff/kubediff/pkg/history/restore"
)

// Remote is a Source asking a running kubediff, as the user of a
// kubeconfig: its bearer token (a static one, or one an exec plugin such
// as EKS's or GKE's makes) goes with every request.
type Remote struct {
	base   *url.URL
	client *http.Client
	// Cluster names one of the clusters a kubediff watches side by side
	// ("": the first, or its only one).
	Cluster string
	// trim is the part of the API's paths base replaces (through the API
	// server: BasePath), hint what to check when the answer is not
	// kubediff's, and down what to check when nothing answers.
	trim, hint, down string
}

// NewRemoteThroughAPIServer asks the kubediff registered as an aggregated
// API (pkg/apiservice) at prefix on the API server rc names, with rc's
// credentials whatever they are: client certificates, exec plugins, tokens.
func NewRemoteThroughAPIServer(rc *rest.Config, prefix, apiService string) (*Remote, error) {
	rt, err := rest.TransportFor(rc)
	if err != nil {
		return nil, err
	}
	host, err := url.Parse(rc.Host)
	if err != nil {
		return nil, err
	}
	if host.Path == "" {
		host.Path = "/" // else JoinPath makes a relative path, which the proxy would send as it is
	}
	r := &Remote{base: host.JoinPath(prefix), client: &http.Client{Transport: rt, Timeout: time.Minute}, trim: BasePath,
		hint: fmt.Sprintf("is kubediff's APIService registered and available? kubectl get apiservice %s", apiService)}
	r.down = r.hint
	return r, nil
}

// ErrNoToken says the kubeconfig's user has no bearer token to send.
var ErrNoToken = errors.New("your kubeconfig's user has no bearer token to send (it signs in with a client certificate, as kind's and minikube's do), " +
	"and kubediff checks callers with TokenReview: use --via-apiserver (the chart's apiService.enabled), or a ServiceAccount's token " +
	"(`kubectl create token NAME`; the recipe is in docs/history.md, \"Client certificates\")")

// NewRemote asks the kubediff at server (http://host:port) as rc's user.
func NewRemote(server string, rc *rest.Config) (*Remote, error) {
	base, err := url.Parse(server)
	if err != nil || base.Host == "" || (base.Scheme != "http" && base.Scheme != "https") {
		return nil, fmt.Errorf("--server %q: want http://HOST:PORT, kubediff's --http-address", server)
	}
	if rc.BearerToken == "" && rc.BearerTokenFile == "" && rc.ExecProvider == nil && rc.AuthProvider == nil {
		return nil, ErrNoToken
	}
	tc, err := rc.TransportConfig()
	if err != nil {
		return nil, err
	}
	// Only the credentials: the API server's TLS settings are not
	// kubediff's.
	tc.TLS = transport.TLSConfig{}
	rt, err := transport.HTTPWrappersForConfig(tc, http.DefaultTransport)
	if err != nil {
		return nil, err
	}
	return &Remote{base: base, client: &http.Client{Transport: rt, Timeout: time.Minute}, hint: "is it kubediff, with a state dir?", down: "is kubediff running with this --http-address?"}, nil
}

// NewSocketRemote asks the kubediff running with a state dir through the
// unix socket it serves there, connected to by dialSocket
// (state.DialSocket): no credentials, as the socket is only for those
// who may read the state dir.
func NewSocketRemote(dialSocket func(context.Context) (net.Conn, error)) *Remote {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return dialSocket(ctx) }
	base := &url.URL{Scheme: "http", Host: "kubediff", Path: "/"}
	return &Remote{base: base, client: &http.Client{Transport: &http.Transport{DialContext: dial}, Timeout: time.Minute},
		hint: "is it kubediff?", down: "is kubediff still running with this state dir?"}
}

// Records implements Source.
func (r *Remote) Records(ctx context.Context, q history.Query) (history.Page, error) {
	v := url.Values{}
	for _, s := range q.Select {
		v.Add("select", FormatSelector(s))
	}
	setIf(v, "namespace", q.Namespace)
	setIf(v, "user", q.User)
	setIf(v, "rule", q.Rule)
	setIf(v, "severity", q.Severity)
	setIf(v, "events", q.Events)
	setIf(v, "release", q.Release)
	if q.Drift {
		v.Set("drift", "true")
	}
	setIf(v, "after", q.After)
	setTime(v, "from", q.From)
	setTime(v, "until", q.Until)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(min(q.Limit, MaxLimit)))
	}
	var page history.Page
	err := r.get(ctx, RecordsPath, v, func(body io.Reader) error { return json.NewDecoder(body).Decode(&page) })
	return page, err
}

// At implements Source.
func (r *Remote) At(ctx context.Context, id change.ObjectID, t time.Time) ([]byte, error) {
	v := objectValues(id)
	setTime(v, "at", t)
	var raw []byte
	err := r.get(ctx, ObjectPath, v, func(body io.Reader) (err error) { raw, err = io.ReadAll(body); return err })
	return raw, err
}

// Blame implements Source.
func (r *Remote) Blame(ctx context.Context, id change.ObjectID, t time.Time, all bool) (blame.Blame, error) {
	v := objectValues(id)
	setTime(v, "at", t)
	if all {
		v.Set("all", "true")
	}
	var b blame.Blame
	err := r.get(ctx, BlamePath, v, func(body io.Reader) error { return json.NewDecoder(body).Decode(&b) })
	return b, err
}

// Restore implements Source.
func (r *Remote) Restore(ctx context.Context, id change.ObjectID, t time.Time) (restore.Manifest, error) {
	v := objectValues(id)
	setTime(v, "at", t)
	var m restore.Manifest
	err := r.get(ctx, RestorePath, v, func(body io.Reader) error { return json.NewDecoder(body).Decode(&m) })
	return m, err
}

// objectValues name an object as the API's object and namespace.
func objectValues(id change.ObjectID) url.Values {
	group, resource, namespace, name := id.Parts()
	v := url.Values{"object": {FormatSelector(history.Selector{Group: group, Resource: resource, Name: name})}}
	setIf(v, "namespace", namespace)
	return v
}

// Resolve implements Source.
func (r *Remote) Resolve(ctx context.Context, name string) ([]discovery.Resource, error) {
	var out struct {
		Types []history.TypeNames `json:"types"`
	}
	if err := r.get(ctx, TypesPath, url.Values{"name": {name}}, func(body io.Reader) error { return json.NewDecoder(body).Decode(&out) }); err != nil {
		return nil, err
	}
	types := make([]discovery.Resource, len(out.Types))
	for i, t := range out.Types {
		types[i] = t.Type()
	}
	return types, nil
}

// GetJSON reads the JSON answer of another of the running kubediff's
// endpoints (/api/v1/types) into out.
func (r *Remote) GetJSON(ctx context.Context, path string, out any) error {
	return r.get(ctx, path, nil, func(body io.Reader) error { return json.NewDecoder(body).Decode(out) })
}

func (r *Remote) get(ctx context.Context, path string, v url.Values, read func(io.Reader) error) error {
	u := r.base.JoinPath(strings.TrimPrefix(path, r.trim))
	if r.Cluster != "" {
		if v == nil {
			v = url.Values{}
		}
		v.Set("cluster", r.Cluster)
	}
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return r.unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return read(resp.Body)
	}
	var e apiError
	if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e) != nil || e.Error == "" {
		return fmt.Errorf("kubediff at %s answered %s (%s)", r.base.Redacted(), resp.Status, r.hint)
	}
	switch e.Reason {
	case "NotFound":
		return history.ErrNotFound
	case "BeforeHistory":
		return history.ErrBeforeHistory
	case "Incomplete":
		return fmt.Errorf("%w%s", restore.ErrIncomplete, strings.TrimPrefix(strings.TrimSpace(e.Error), restore.ErrIncomplete.Error()))
	}
	return fmt.Errorf("kubediff at %s: %s", r.base.Redacted(), strings.TrimSpace(e.Error))
}

// Ping asks the running kubediff for one cheap answer (its types), so that
// a command serving its page can refuse to start when it does not answer.
func (r *Remote) Ping(ctx context.Context) error {
	var out json.RawMessage
	return r.get(ctx, TypesPath, url.Values{"name": {"namespaces"}}, func(body io.Reader) error { return json.NewDecoder(body).Decode(&out) })
}

// unreachable says that the kubediff at base did not answer, and what to
// check.
func (r *Remote) unreachable(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return fmt.Errorf("kubediff at %s does not answer (%w): %s", r.base.Redacted(), err, r.down)
}

func setIf(v url.Values, key, value string) {
	if value != "" {
		v.Set(key, value)
	}
}

func setTime(v url.Values, key string, t time.Time) {
	if !t.IsZero() {
		v.Set(key, t.UTC().Format(time.RFC3339Nano))
	}
}

// Proxy forwards the history API's requests to the running kubediff with
// the kubeconfig user's credentials (for `kubediff ui`: the page in the
// browser calls its own origin, and this signs each call). Each request
// names r.Cluster, the cluster those credentials are for; one asking for
// another cluster is refused, as its token would go there (cluster.go).
func (r *Remote) Proxy() http.Handler {
	proxy := &httputil.ReverseProxy{
		Transport: r.client.Transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Through the API server, base ends in the aggregated API's
			// prefix, which stands for BasePath: the page's
			// /api/v1/history/records is the API's prefix + /records.
			pr.Out.URL.Path = strings.TrimPrefix(pr.Out.URL.Path, r.trim)
			pr.Out.URL.RawPath = ""
			pr.SetURL(r.base)
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
			r.nameCluster(pr.Out)
		},
		// The page shows the error's sentence: a bare "Bad Gateway" said
		// nothing of which kubediff did not answer or why.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeError(w, http.StatusBadGateway, "Unreachable", r.unreachable(err))
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !r.refuseOtherCluster(w, req) {
			proxy.ServeHTTP(w, req)
		}
	})
}
