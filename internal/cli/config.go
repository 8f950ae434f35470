package cli

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/kubediff/kubediff/pkg/config"
)

// envPrefix is the prefix of environment variables: KUBEDIFF_OUTPUT,
// KUBEDIFF_LOG_LEVEL, KUBEDIFF_DIFF_IGNOREPATHS.
const envPrefix = "KUBEDIFF"

// flagKeys maps flag names to the config keys they override.
var flagKeys = map[string]string{
	"kubeconfig":                        "kubeconfig",
	"context":                           "contexts",
	"all-contexts":                      "allContexts",
	"cluster-name":                      "clusterName",
	"namespace":                         "namespaces",
	"resources":                         "resources",
	"exclude-resources":                 "excludeResources",
	"exclude-namespace":                 "excludeNamespaces",
	"selector":                          "labelSelector",
	"field-selector":                    "fieldSelector",
	"rediscovery-interval":              "rediscoveryInterval",
	"output":                            "output",
	"color":                             "color",
	"fold":                              "fold",
	"events":                            "events",
	"ignore-path":                       "diff.ignorePaths",
	"patch":                             "diff.patch",
	"diff-style":                        "diff.style",
	"log-level":                         "log.level",
	"log-format":                        "log.format",
	"queue-size":                        "queueSize",
	"queue-max-bytes":                   "queueMaxBytes",
	"drain-timeout":                     "drainTimeout",
	"read-batching":                     "readBatching",
	"http-address":                      "httpAddress",
	"state-dir":                         "state.dir",
	"api-service-address":               "apiService.address",
	"history-retention":                 "history.retention",
	"history-max-bytes":                 "history.maxBytes",
	"history-events-retention":          "history.events.retention",
	"history-store":                     "history.store",
	"history-store-password-file":       "history.storePasswordFile",
	"identity-wait":                     "identity.wait",
	"helm-storage":                      "release.helmStorage",
	"compress-cache":                    "compressCache",
	"leader-elect":                      "leaderElection.enabled",
	"leader-election-namespace":         "leaderElection.namespace",
	"leader-election-id":                "leaderElection.name",
	"leader-election-lease-duration":    "leaderElection.leaseDuration",
	"leader-election-renew-deadline":    "leaderElection.renewDeadline",
	"leader-election-retry-period":      "leaderElection.retryPeriod",
	"audit-webhook-address":             "audit.webhook.address",
	"audit-webhook-cert-file":           "audit.webhook.certFile",
	"audit-webhook-key-file":            "audit.webhook.keyFile",
	"audit-webhook-client-ca-file":      "audit.webhook.clientCAFile",
	"audit-webhook-token-file":          "audit.webhook.tokenFile",
	"audit-log":                         "audit.log.path",
	"admission-observer-address":        "admissionObserver.address",
	"admission-observer-cert-file":      "admissionObserver.certFile",
	"admission-observer-key-file":       "admissionObserver.keyFile",
	"admission-observer-client-ca-file": "admissionObserver.clientCAFile",
	"admission-observer-token-file":     "admissionObserver.tokenFile",
}

func addGlobalFlags(root *cobra.Command) {
	d := config.Default()
	f := root.PersistentFlags()
	f.String("config", "", "config file (YAML); also KUBEDIFF_CONFIG")
	f.String("kubeconfig", "", "path to the kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster)")
	f.StringArray("context", nil, "kubeconfig context to use (default: the current context); watch takes it more than once to watch several clusters")
	f.String("log-level", d.Log.Level, "operational log level: debug, info, warn, error")
	f.String("log-format", d.Log.Format, "operational log format on stderr: text, json")
}

// addSelectionFlags adds the flags choosing what to watch.
func addSelectionFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceP("namespace", "n", nil, "watch only this namespace, a name or a glob (repeatable; default: all namespaces)")
	f.StringSlice("exclude-namespace", nil, "never watch this namespace, a name or a glob (repeatable)")
	f.StringP("selector", "l", "", "label selector the API server filters every type by")
	f.String("field-selector", "", "field selector the API server filters every type by")
	f.BoolP("all-namespaces", "A", false, "watch all namespaces, overriding --namespace and the config file")
	f.StringSlice("resources", nil, "watch only these types, as kubectl names them: plural, kind, short name, resource.group (default: all)")
	f.StringSlice("exclude-resources", nil, "do not watch these types")
}

// loadConfig layers defaults, the config file, KUBEDIFF_* environment and
// flags (each overriding the one before) and validates the result. Every
// error is a usageError naming the key, and the file when it came from one.
func loadConfig(cmd *cobra.Command) (config.Config, error) {
	return loadConfigWithArgs(cmd, cmd.Flags().Args())
}

// loadConfigWithArgs is loadConfig with the watch command's arguments
// given (none while completing them).
func loadConfigWithArgs(cmd *cobra.Command, args []string) (config.Config, error) {
	v := viper.New()
	setDefaults(v, "", reflect.ValueOf(config.Default()))
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()

	path := configPath(cmd)
	if path != "" {
		if err := checkConfigFile(path); err != nil {
			return config.Config{}, usageError{err}
		}
		useConfigFile(v, path)
		if err := v.ReadInConfig(); err != nil {
			return config.Config{}, usageError{fmt.Errorf("config file %s: %w", path, err)}
		}
	}
	for name, key := range flagKeys {
		if fl := cmd.Flags().Lookup(name); fl != nil && !isUnbound(fl) {
			if err := v.BindPFlag(key, fl); err != nil {
				return config.Config{}, err
			}
		}
	}

	var cfg config.Config
	if err := v.Unmarshal(&cfg); err != nil {
		return config.Config{}, usageError{fmt.Errorf("configuration from environment or flags: %w", unwrapDecodeError(err))}
	}
	if all, _ := cmd.Flags().GetBool("all-namespaces"); all {
		cfg.Namespaces = nil
	}
	if len(cfg.Contexts) == 1 {
		cfg.Context, cfg.Contexts = cfg.Contexts[0], nil // one --context, as before
	}
	if err := applyArgs(&cfg, args); err != nil {
		return config.Config{}, err
	}
	applyDefaultStateDir(cmd, v, &cfg)
	if fl := cmd.Flags().Lookup("show-helm-storage"); fl != nil && fl.Changed {
		// A flag to show what a default rule hides: the rule's key inverted.
		cfg.Diff.Defaults.HelmStorage = fl.Value.String() != "true"
	}
	if !v.InConfig("output") && !outputChosen(cmd) && toTerminal(cmd.OutOrStdout()) {
		cfg.Output = config.OutputText
	}
	if err := cfg.Validate(); err != nil {
		where := "invalid configuration"
		if path != "" {
			where = "invalid configuration (file " + path + ", environment and flags)"
		}
		return config.Config{}, usageError{fmt.Errorf("%s: %w", where, err)}
	}
	return cfg, nil
}

// checkConfigFile reads the file alone and decodes it strictly, so that an
// unknown key or a value of the wrong type is reported with the file's name
// instead of being ignored or blamed on the environment.
func checkConfigFile(path string) error {
	if info, err := os.Stat(path); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	} else if info.IsDir() {
		return fmt.Errorf("config file %s is a directory: --config (or KUBEDIFF_CONFIG) wants a YAML file, such as config.example.yaml", path)
	}
	fv := viper.New()
	useConfigFile(fv, path)
	if err := fv.ReadInConfig(); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	known := map[string]bool{}
	knownKeys(reflect.TypeFor[config.Config](), "", known)
	var unknown []string
	for _, k := range fv.AllKeys() {
		if !known[k] && !underKnownKey(k, known) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		noun := "key"
		if len(unknown) > 1 {
			noun = "keys"
		}
		return fmt.Errorf("config file %s: unknown %s %s (config.example.yaml lists every key)", path, noun, strings.Join(unknown, ", "))
	}
	var scratch config.Config
	strict := func(dc *mapstructure.DecoderConfig) {
		dc.WeaklyTypedInput = false
		dc.ErrorUnused = true // keys inside list items (diff.ignore[0].pathz)
	}
	if err := fv.Unmarshal(&scratch, strict); err != nil {
		return fmt.Errorf("config file %s: %w", path, unwrapDecodeError(err))
	}
	return nil
}

// useConfigFile points v at the config file, read as YAML whatever its
// name ends in: viper would otherwise guess the format from the extension
// and refuse /etc/kubediff/config with `Unsupported Config Type ""`. YAML
// reads JSON too.
func useConfigFile(v *viper.Viper, path string) {
	v.SetConfigFile(path)
	v.SetConfigType("yaml")
}

// unwrapDecodeError drops mapstructure's generic preamble so the message
// starts with the key.
func unwrapDecodeError(err error) error {
	var de *mapstructure.DecodeError
	if errors.As(err, &de) {
		return de
	}
	return err
}

// underKnownKey reports whether key lies inside a known key's value, as
// when a map is written where a list belongs: that is a type error, which
// the strict decode reports against the known key.
func underKnownKey(key string, known map[string]bool) bool {
	for i := strings.LastIndex(key, "."); i > 0; i = strings.LastIndex(key[:i], ".") {
		if known[key[:i]] {
			return true
		}
	}
	return false
}

// knownKeys collects the lower-cased dotted keys of a config struct, as
// viper reports them.
func knownKeys(t reflect.Type, prefix string, into map[string]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		if tag == "" || tag == "-" {
			continue
		}
		key := strings.ToLower(prefix + tag)
		if f.Type.Kind() == reflect.Struct {
			knownKeys(f.Type, key+".", into)
			continue
		}
		into[key] = true
	}
}

// setDefaults registers every key with viper, which AutomaticEnv needs to
// find environment variables for keys the file does not mention.
func setDefaults(v *viper.Viper, prefix string, val reflect.Value) {
	t := val.Type()
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("mapstructure")
		if tag == "" || tag == "-" {
			continue
		}
		if t.Field(i).Type.Kind() == reflect.Struct {
			setDefaults(v, prefix+tag+".", val.Field(i))
			continue
		}
		v.SetDefault(prefix+tag, val.Field(i).Interface())
	}
}

// unboundAnnotation marks a flag that shares a config flag's name but not
// its meaning (history's -o json|text, get's -o yaml|json): it is read
// by its command, never bound to the config key.
const unboundAnnotation = "kubediff/unbound"

// markUnbound marks the command's flags as read by the command alone:
// query flags that are no config key.
func markUnbound(cmd *cobra.Command, names ...string) {
	for _, name := range names {
		_ = cmd.Flags().SetAnnotation(name, unboundAnnotation, []string{"true"})
	}
}

func isUnbound(f *pflag.Flag) bool { return f.Annotations[unboundAnnotation] != nil }
