package historyapi

import (
	"fmt"
	"net/http"
)

// A bearer token does not say which cluster issued it, so a kubediff
// watching several clusters cannot tell where a token belongs. The rule
// that keeps each token with its cluster: a request names its cluster
// (?cluster=NAME) and its token is reviewed by that cluster alone (a
// kubediff of several clusters refuses a request with a token that names
// none, one of a single cluster refuses another cluster's name); the CLI
// takes the token from the kubeconfig context named like the cluster
// (--cluster NAME), and `kubediff ui` signs only its own cluster's
// requests.

// ClusterParam is the query parameter naming the cluster a request is
// for.
const ClusterParam = "cluster"

// WriteError answers with the history API's JSON error: status, a
// machine-readable reason and the sentence err says.
func WriteError(w http.ResponseWriter, status int, reason string, err error) {
	writeError(w, status, reason, err)
}

// refuseOtherCluster refuses a request of the page that names another
// cluster than the one r's credentials are for (`kubediff ui`'s proxy).
func (r *Remote) refuseOtherCluster(w http.ResponseWriter, req *http.Request) bool {
	asked := req.URL.Query().Get(ClusterParam)
	if asked == "" || asked == r.Cluster {
		return false
	}
	WriteError(w, http.StatusBadRequest, "BadRequest", fmt.Errorf("cluster %q: this page sends the credentials for %s only; run kubediff ui --cluster %s for that cluster", asked, clusterOrDefault(r.Cluster), asked))
	return true
}

// nameCluster makes an outgoing request name r.Cluster alone.
func (r *Remote) nameCluster(out *http.Request) {
	q := out.URL.Query()
	q.Del(ClusterParam)
	if r.Cluster != "" {
		q.Set(ClusterParam, r.Cluster)
	}
	out.URL.RawQuery = q.Encode()
}

func clusterOrDefault(name string) string {
	if name == "" {
		return "the cluster of your kubeconfig's current context"
	}
	return "cluster " + name
}
