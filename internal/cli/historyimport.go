package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
	"github.com/kubediff/kubediff/pkg/state"
)

func newHistoryImportCommand(out io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import --state-dir DIR --history-store DSN [--cluster NAME]",
		Short: "Copy a state dir's history into the PostgreSQL history store",
		Long: `Copy the history kept in a state dir, and the states of the objects it
stores, into the PostgreSQL database --history-store names, as its
cluster's. Run it while no kubediff runs with the dir. Entries the
database holds already are passed over: a second import writes nothing
twice. The password comes from --history-store-password-file, PGPASSWORD
or PGPASSFILE, never the DSN (docs/fleet.md):

  kubediff history import --state-dir DIR --history-store postgres://USER@HOST:5432/DB --cluster NAME`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfigWithArgs(cmd, nil)
			if err != nil {
				return err
			}
			if cfg.State.Dir == "" || cfg.History.Store == "" {
				return usageError{errors.New("say what to import and where: --state-dir DIR and --history-store DSN")}
			}
			dir, err := state.OpenReadOnly(cfg.State.Dir)
			if errors.Is(err, state.ErrInUse) {
				return fmt.Errorf("state dir %s is in use by a running kubediff: stop it first, or let it write the database itself with --history-store", cfg.State.Dir)
			}
			if err != nil {
				return err
			}
			defer dir.Close()
			store, err := app.OpenHistoryStore(cmd.Context(), cfg)
			if errors.Is(err, pgstore.ErrNewerSchema) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			defer store.Close()
			return importDir(cmd, out, dir, store, cfg.History.Store)
		},
	}
	f := cmd.Flags()
	f.String("state-dir", "", "the state dir whose history to copy")
	f.String("history-store", "", "the PostgreSQL database to copy it into (postgres://USER@HOST/DB; the password from --history-store-password-file or PGPASSWORD)")
	f.String("history-store-password-file", "", "file holding --history-store's password")
	f.String("cluster", "", "the cluster's name in the database (default: the name it has there, else its id)")
	markUnbound(cmd, "cluster")
	return cmd
}

// importDir copies dir's history into store and says what it did.
func importDir(cmd *cobra.Command, out io.Writer, dir *state.ReadOnly, store *pgstore.Store, dsn string) error {
	cluster, instance := dir.Identity()
	if cluster == "" {
		return fmt.Errorf("state dir: it names no cluster (no kubediff watch ever ran with it)")
	}
	begin, err := dir.History.Begin()
	if err != nil {
		return err
	}
	if instance == "" {
		instance = pgstore.ImportInstance(cluster, begin)
	}
	name, _ := cmd.Flags().GetString("cluster")
	w := pgstore.Writer{Cluster: app.StoreClusterID(cluster), Name: name, Instance: instance}
	n, err := store.Import(cmd.Context(), w, dir.History, dir.EachStored)
	if err != nil {
		return fmt.Errorf("import into %s: %w", pgstore.Where(dsn), err)
	}
	_, err = fmt.Fprintf(out, "imported %d entries of cluster %s into %s\n", n, w.Cluster, pgstore.Where(dsn))
	return err
}
