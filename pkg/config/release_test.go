package config

import (
	"strings"
	"testing"
)

// release.helmStorage takes Helm's in-cluster drivers, at least one; a
// mistake names the key and the flag.
func TestHelmStorage(t *testing.T) {
	for _, tc := range []struct {
		storage []string
		err     string // "" for valid
	}{
		{[]string{"secrets"}, ""},
		{[]string{"configmaps"}, ""},
		{[]string{"secrets", "configmaps"}, ""},
		{nil, "release.helmStorage (--helm-storage) is empty"},
		{[]string{"configmap"}, `release.helmStorage (--helm-storage): "configmap" is not secrets or configmaps`},
	} {
		c := Default()
		c.Release.HelmStorage = tc.storage
		err := c.Validate()
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: %v, want %q", tc.storage, err, tc.err)
		}
	}
}
