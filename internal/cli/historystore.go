package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
)

// openHistoryStore opens the history in history.store (--history-store),
// of the cluster --cluster names, or of the only one it holds; nil
// without a store unless --server or --via-apiserver asks a running
// kubediff instead.
func openHistoryStore(cmd *cobra.Command) (historyapi.Source, func(), error) {
	reader, store, err := openStoreReader(cmd)
	if reader == nil || err != nil {
		return nil, nil, err
	}
	rules, err := configRules(cmd)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return storeSource{Local: historyapi.Local{Reader: reader, Rules: rules}, store: store}, store.Close, nil
}

// storeSource is a history store's history, one cluster's or a fleet's,
// that can also answer for one cluster of it by name (MCP's cluster
// argument).
type storeSource struct {
	historyapi.Local
	store *pgstore.Store
}

// Cluster is the history of the cluster name (or id) means.
func (s storeSource) Cluster(ctx context.Context, name string) (historyapi.Source, error) {
	id, err := storeCluster(ctx, s.store, name)
	if err != nil {
		return nil, err
	}
	return historyapi.Local{Reader: s.store.Cluster(id), Rules: s.Rules}, nil
}

// configRules are the diff rules the flags and config give: what the
// history's states lack (a restore's check, blame's view).
func configRules(cmd *cobra.Command) (*diff.Differ, error) {
	cfg, err := loadConfigWithArgs(cmd, nil)
	if err != nil {
		return nil, err
	}
	return app.DiffRules(cfg)
}

// openStoreReader opens the reader of one cluster's history in
// history.store (a fleet's, for the commands that list records); nil
// without a store, or when --server or --via-apiserver asks a running
// kubediff instead. Close the store when done.
func openStoreReader(cmd *cobra.Command) (*pgstore.Reader, *pgstore.Store, error) {
	server, _ := cmd.Flags().GetString("server")
	via, _ := cmd.Flags().GetBool("via-apiserver")
	if server != "" || via {
		return nil, nil, nil
	}
	cfg, err := loadConfigWithArgs(cmd, nil)
	if err != nil || cfg.History.Store == "" {
		return nil, nil, err
	}
	store, err := app.OpenHistoryStore(cmd.Context(), cfg)
	if errors.Is(err, pgstore.ErrNewerSchema) {
		return nil, nil, usageError{err}
	}
	if err != nil {
		return nil, nil, err
	}
	name, _ := cmd.Flags().GetString("cluster")
	reader, err := storeReader(cmd, store, name)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return reader, store, nil
}

// storeReader reads the cluster name means; without one, the only
// cluster the database holds, or, for `history`, the page and MCP, which
// list records, every cluster's together.
func storeReader(cmd *cobra.Command, store *pgstore.Store, name string) (*pgstore.Reader, error) {
	if name == "" && (cmd.Name() == "history" || cmd.Name() == "ui" || cmd.Name() == "mcp") {
		clusters, err := store.Clusters(cmd.Context())
		if err != nil {
			return nil, err
		}
		if len(clusters) > 1 {
			return store.Fleet(cmd.Context())
		}
	}
	id, err := storeCluster(cmd.Context(), store, name)
	if err != nil {
		return nil, err
	}
	return store.Cluster(id), nil
}

// storeCluster finds the cluster a name (or id) means among those the
// database holds; none given, the only one.
func storeCluster(ctx context.Context, store *pgstore.Store, name string) (string, error) {
	clusters, err := store.Clusters(ctx)
	if err != nil {
		return "", err
	}
	var known []string
	for _, c := range clusters {
		if name != "" && (c.Name == name || c.ID == name) || name == "" && len(clusters) == 1 {
			return c.ID, nil
		}
		known = append(known, c.Name+" ("+c.ID+")")
	}
	switch {
	case len(clusters) == 0:
		return "", errors.New("the history store holds no cluster's history yet: a kubediff watch with --history-store writes it")
	case name == "":
		return "", usageError{fmt.Errorf("the history store holds %d clusters and an object is one cluster's: name one with --cluster: %s", len(clusters), strings.Join(known, ", "))}
	}
	return "", usageError{fmt.Errorf("--cluster %s: the history store holds no such cluster; it holds %s", name, strings.Join(known, ", "))}
}
