package cli

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/config"
)

// reloadCheckInterval is how often the config file is checked for changes.
// Polling the content works for every way a file is replaced, including
// the symlink swap of a mounted ConfigMap.
const reloadCheckInterval = 2 * time.Second

// loaded is a config and the hash of the file content it came from.
type loaded struct {
	cfg  config.Config
	hash [32]byte
}

// watchWithReload runs the watch, and when the config file changes to a
// valid config, restarts it with the new one. An invalid new config is
// logged and the running one kept; so is a new config that fails only when
// the watch starts (a resource name the server does not know, an address
// in use): kubediff goes back to the last config that worked.
func watchWithReload(cmd *cobra.Command, cfg config.Config, out, stderr io.Writer) error {
	path := configPath(cmd)
	if path == "" {
		return app.Run(cmd.Context(), cfg, out, stderr)
	}
	current := loaded{cfg: cfg, hash: fileHash(path)}
	var lastGood *loaded
	for {
		runCtx, cancel := context.WithCancel(cmd.Context())
		next := make(chan loaded, 1)
		go pollConfig(runCtx, path, current.hash, func(h [32]byte) bool {
			log := app.NewLogger(stderr, current.cfg.Log)
			newCfg, err := loadConfig(cmd)
			if err != nil {
				log.Error("config file changed but is invalid; keeping the running config", "file", path, "err", err)
				return false
			}
			log.Info("config file changed: restarting with it", "file", path)
			next <- loaded{cfg: newCfg, hash: h}
			cancel()
			return true
		})
		err := app.Run(runCtx, current.cfg, out, stderr)
		cancel()
		if err != nil {
			if lastGood == nil || cmd.Context().Err() != nil {
				return err
			}
			app.NewLogger(stderr, lastGood.cfg.Log).Error("the new config failed to start; going back to the previous one", "file", path, "err", err)
			current, lastGood = loaded{cfg: lastGood.cfg, hash: current.hash}, nil
			continue
		}
		select {
		case n := <-next:
			good := current
			lastGood, current = &good, n
		default:
			return nil // stopped by a signal
		}
	}
}

func configPath(cmd *cobra.Command) string {
	if path, _ := cmd.Flags().GetString("config"); path != "" {
		return path
	}
	return os.Getenv(envPrefix + "_CONFIG")
}

// pollConfig calls changed when the file's content differs from what was
// last seen, until changed returns true (a restart is under way) or ctx
// is done.
func pollConfig(ctx context.Context, path string, seen [32]byte, changed func([32]byte) bool) {
	tick := time.NewTicker(reloadCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			h := fileHash(path)
			if h == seen {
				continue
			}
			seen = h
			if changed(h) {
				return
			}
		}
	}
}

func fileHash(path string) [32]byte {
	data, _ := os.ReadFile(path)
	return sha256.Sum256(data)
}
