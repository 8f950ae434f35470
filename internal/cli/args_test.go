package cli

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kubediff/kubediff/pkg/config"
)

func TestArgumentsNameTypesAndObjectsAsKubectlDoes(t *testing.T) {
	tests := []struct {
		args             []string
		types, objects   []string
		wantUsageMessage string
	}{
		{args: []string{"deployments,configmaps"}, types: []string{"deployments", "configmaps"}},
		{args: []string{"deployment/web"}, objects: []string{"deployment/web"}},
		{args: []string{"deploy/web", "cm/settings"}, objects: []string{"deploy/web", "cm/settings"}},
		{args: []string{"deploy", "web", "api"}, objects: []string{"deploy/web", "deploy/api"}},
		{args: []string{"deploy,cm", "web"}, wantUsageMessage: "arguments: web: names must follow one type (as in kubectl get deployment web), not deploy,cm"},
		{args: []string{"deploy/web", "api"}, wantUsageMessage: "api: give objects as TYPE/NAME, or a type and then names, not both"},
		{args: []string{"deploy", "cm/x"}, wantUsageMessage: "cm/x: give objects as TYPE/NAME, or a type and then names, not both"},
		{args: []string{"deploy/"}, wantUsageMessage: `arguments: "deploy/" is not TYPE/NAME (such as deployment/web)`},
		{args: []string{"deploy,,cm"}, wantUsageMessage: `arguments: "deploy,,cm": an empty type`},
	}
	for _, tt := range tests {
		cfg := config.Config{Resources: []string{"from-config"}, Objects: []string{"pod/from-config"}}
		err := applyArgs(&cfg, tt.args)
		if tt.wantUsageMessage != "" {
			var ue usageError
			if !errors.As(err, &ue) || !containsAll(err.Error(), tt.wantUsageMessage) {
				t.Errorf("%v: err = %v, want a usage error saying %q", tt.args, err, tt.wantUsageMessage)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(cfg.Resources, tt.types) || !reflect.DeepEqual(cfg.Objects, tt.objects) {
			t.Errorf("%v: resources %v, objects %v (err %v); want %v, %v", tt.args, cfg.Resources, cfg.Objects, err, tt.types, tt.objects)
		}
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
