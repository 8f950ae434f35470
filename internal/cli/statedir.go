package cli

import (
	"cmp"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/state"
)

// stateDirSources names every way to choose a state dir, for the
// messages that say where the history is.
const stateDirSources = "--state-dir DIR, KUBEDIFF_STATE_DIR or the config's state.dir"

// defaultStateRoot is where a person's kubediff keeps its history when
// nothing names a state dir: $XDG_STATE_HOME/kubediff, else
// ~/.local/state/kubediff (the XDG base directory spec's place for
// state that outlives a run). "" in a Pod: there a state dir is a volume
// its manifest mounts, and one in the container's own file system would
// vanish with the Pod while looking kept.
func defaultStateRoot() string {
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return ""
	}
	if xdg := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(xdg) { // the spec: a relative one is ignored
		return filepath.Join(xdg, "kubediff")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "state", "kubediff")
}

// defaultStateRootText is defaultStateRoot as the messages name it.
func defaultStateRootText() string {
	return "$XDG_STATE_HOME/kubediff, else ~/.local/state/kubediff; none in a Pod"
}

// stateDirNamed reports whether the flag, the environment or the config
// file named a state dir, even an empty one: `--state-dir ”` keeps none.
func stateDirNamed(cmd *cobra.Command, v *viper.Viper) bool {
	if fl := cmd.Flags().Lookup("state-dir"); fl != nil && fl.Changed {
		return true
	}
	if _, ok := os.LookupEnv(envPrefix + "_STATE_DIR"); ok {
		return true
	}
	return v.InConfig("state.dir")
}

// applyDefaultStateDir gives the commands that write or read a history
// (those with --state-dir) the default state dir when nothing named
// one. Each context's history has its own directory under the default
// root, clusters/CONTEXT as a fleet's state dir lays them out: one state
// dir holds one cluster, and would forget another's history when the
// kubeconfig's current context switches.
func applyDefaultStateDir(cmd *cobra.Command, v *viper.Viper, cfg *config.Config) {
	if cmd.Flags().Lookup("state-dir") == nil || stateDirNamed(cmd, v) {
		return
	}
	root := defaultStateRoot()
	if root == "" {
		return
	}
	if len(cfg.Contexts) > 0 || cfg.AllContexts {
		cfg.State.Dir, cfg.State.Default = root, true // the fleet adds clusters/CONTEXT
		return
	}
	cluster := ""
	if fl := cmd.Flags().Lookup("cluster"); fl != nil {
		cluster = fl.Value.String()
	}
	context := cmp.Or(cluster, cfg.Context, currentContext(cfg.Kubeconfig))
	if context == "" {
		return // no cluster to keep a history of: watch says so itself
	}
	cfg.State.Dir, cfg.State.Default = app.ClusterStateDir(root, context), true
}

// currentContext is the kubeconfig's current context, read from the
// file alone (no network), or "" when there is none.
func currentContext(kubeconfig string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	raw, err := rules.Load()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

// watchWithDefaultState runs the watch, saying once on stderr where the
// history goes when it is the default state dir, since nobody asked for
// it. A default dir in use by another kubediff (a second terminal
// watching the same context) is no reason to refuse: that watch carries
// on without a history, and says so.
func watchWithDefaultState(cmd *cobra.Command, cfg config.Config, out, stderr io.Writer) error {
	if !cfg.State.Default {
		return watchWithReload(cmd, cfg, out, stderr)
	}
	log := app.NewLogger(stderr, cfg.Log)
	log.Info("keeping the history in the default state dir; --state-dir DIR or KUBEDIFF_STATE_DIR chooses another, --state-dir '' none",
		"dir", cfg.State.Dir)
	err := watchWithReload(cmd, cfg, out, stderr)
	if !errors.Is(err, state.ErrInUse) || cmd.Context().Err() != nil {
		return err
	}
	log.Warn("the default state dir is in use by another kubediff: this one keeps no history (give it its own with --state-dir DIR)",
		"dir", cfg.State.Dir)
	cfg.State.Dir, cfg.State.Default = "", false
	return watchWithReload(cmd, cfg, out, stderr)
}
