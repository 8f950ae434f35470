package cli

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/pkg/config"
)

// reloadCheckInterval is how often the config file is checked for changes.
// Polling the content works for every way a file is replaced, including
// the symlink swap of a mounted ConfigMap.
const reloadCheckInterval = 2 * time.Second

// watchWithReload runs the watch, and when the config file changes to a
// valid config, restarts it with the new one. An invalid new config is
// logged and the running one kept.
func watchWithReload(cmd *cobra.Command, cfg config.Config, out, stderr io.Writer) error {
	path := configPath(cmd)
	if path == "" {
		return runWatch(cmd.Context(), cfg, out, stderr)
	}
	for {
		runCtx, cancel := context.WithCancel(cmd.Context())
		next := make(chan config.Config, 1)
		go pollConfig(runCtx, path, func() {
			log := newLogger(stderr, cfg.Log)
			newCfg, err := loadConfig(cmd)
			if err != nil {
				log.Error("config file changed but is invalid; keeping the running config", "file", path, "err", err)
				return
			}
			log.Info("config file changed: restarting with it", "file", path)
			next <- newCfg
			cancel()
		})
		err := runWatch(runCtx, cfg, out, stderr)
		cancel()
		if err != nil {
			return err
		}
		select {
		case cfg = <-next:
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

// pollConfig calls changed (once) when the file's content changes.
func pollConfig(ctx context.Context, path string, changed func()) {
	last := fileHash(path)
	tick := time.NewTicker(reloadCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			h := fileHash(path)
			if h == last {
				continue
			}
			last = h
			changed()
		}
	}
}

func fileHash(path string) [32]byte {
	data, _ := os.ReadFile(path)
	return sha256.Sum256(data)
}
