package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChartRefusesWhatKubediffRefuses: the chart's values.schema.json,
// generated from pkg/config, refuses at `helm lint`/`helm template` (so at
// `helm install`) the config kubediff would refuse at start, naming the
// key's path; and it accepts config.example.yaml, every key kubediff has.
func TestChartRefusesWhatKubediffRefuses(t *testing.T) {
	chart := filepath.Join(repoRoot(t), "charts", "kubediff")
	example, err := os.ReadFile(filepath.Join(repoRoot(t), "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := helm(t, "lint", chart, "--strict", "-f", valuesWithConfig(t, string(example))); err != nil {
		t.Errorf("config.example.yaml as the chart's config: %v\n%s", err, out)
	}
	tests := []struct {
		name, config string
		helmSays     []string
		kubediffSays string
	}{
		{"a misspelt key", "outptu: text\n", []string{"at '/config'", "'outptu' not allowed"}, "unknown key outptu"},
		{"a word not allowed", "output: txt\n", []string{"at '/config/output'"}, `output: "txt" is not one of json, text, none`},
		{"a Slack sink without channel or token", "sinks:\n  - name: team\n    type: slack\n",
			[]string{"at '/config/sinks/0'", "missing property 'channel'", "missing property 'token'"}, "channel: empty"},
		{"a webhook without url", "sinks:\n  - name: audit\n    type: webhook\n", []string{"at '/config/sinks/0'", "missing property 'url'"}, "url: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := valuesWithConfig(t, tt.config)
			for _, cmd := range [][]string{{"lint", chart, "--strict", "-f", values}, {"template", "x", chart, "-f", values}} {
				out, err := helm(t, cmd...)
				if err == nil {
					t.Errorf("helm %s accepts it:\n%.500s", cmd[0], out)
				}
				for _, want := range tt.helmSays {
					if !strings.Contains(out, want) {
						t.Errorf("helm %s does not say %q:\n%s", cmd[0], want, out)
					}
				}
			}
			file := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(file, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr syncBuffer
			if code := runCLI(&stdout, &stderr, "watch", "--kubeconfig", env.Kubeconfig, "--config", file); code != 2 || !strings.Contains(stderr.String(), tt.kubediffSays) {
				t.Errorf("kubediff with that config: exit %d, %s; want exit 2 saying %q", code, stderr.String(), tt.kubediffSays)
			}
		})
	}
}

// valuesWithConfig writes a values file whose config is the YAML given.
func valuesWithConfig(t *testing.T, config string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("config:\n")
	for line := range strings.Lines(config) {
		b.WriteString("  " + line)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(b.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
