package historymcp

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	authnv1 "k8s.io/api/authentication/v1"

	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Path is where kubediff's HTTP address serves MCP (streamable HTTP).
const Path = "/mcp"

type userKey struct{}

// Register serves MCP at Path on mux to callers access lets in (and no
// web page of another origin: see sameOriginOnly), each
// answered from api's history as their RBAC allows, its reads taking
// turns with the API's queries. It is stateless: each request
// is authenticated and answered by a server bound to its own caller, so a
// session never carries one caller's view to another's request.
func Register(mux *http.ServeMux, api *historyapi.Handler, access *historyapi.Access, health func(context.Context) ([]watcher.TargetState, error), version string) {
	handler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		user, _ := r.Context().Value(userKey{}).(*authnv1.UserInfo)
		return NewServer(Options{Source: api.SourceFor(user), Health: health, Version: version})
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	mux.Handle(Path, sameOriginOnly(access.Require(func(w http.ResponseWriter, r *http.Request, user *authnv1.UserInfo) {
		handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})))
}
