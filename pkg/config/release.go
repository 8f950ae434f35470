package config

import (
	"fmt"
	"slices"
)

// The storage drivers of Helm's whose release records live in the
// cluster, as ReleaseConfig.HelmStorage names them.
const (
	HelmSecrets    = "secrets"
	HelmConfigMaps = "configmaps"
)

// HelmStorages are the words release.helmStorage takes.
var HelmStorages = []string{HelmSecrets, HelmConfigMaps}

// ReleaseConfig says where the releases behind changes are read from
// (docs/why.md#releases).
type ReleaseConfig struct {
	// HelmStorage names where Helm keeps its release records in this
	// cluster: secrets (Helm's default driver), configmaps
	// (HELM_DRIVER=configmap), or both. A record is believed only from
	// these: anyone who may create a ConfigMap in a namespace could label
	// one as a release's record, so ConfigMaps are read only when named.
	HelmStorage []string `mapstructure:"helmStorage"`
}

// check checks that HelmStorage names Helm's in-cluster drivers, at
// least one.
func (r ReleaseConfig) check() []error {
	if len(r.HelmStorage) == 0 {
		return []error{fmt.Errorf("release.helmStorage (--helm-storage) is empty: name where Helm keeps its release records, %s (Helm's default), %s, or both", HelmSecrets, HelmConfigMaps)}
	}
	var errs []error
	for _, driver := range r.HelmStorage {
		if !slices.Contains(HelmStorages, driver) {
			errs = append(errs, fmt.Errorf("release.helmStorage (--helm-storage): %q is not %s or %s (Helm's drivers whose records live in the cluster)", driver, HelmSecrets, HelmConfigMaps))
		}
	}
	return errs
}
