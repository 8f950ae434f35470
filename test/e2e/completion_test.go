package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubediff/kubediff/internal/testsync"
)

// bashCompletion is Debian's bash-completion, which cobra's bash script
// needs (make shells installs it).
const bashCompletion = "/usr/share/bash-completion/bash_completion"

// TestCompletionInARealBash: bash, with bash-completion and the script
// `kubediff completion bash` writes sourced, completes every command's
// types, objects, namespaces, contexts, clusters, output formats and
// TIMEs from the local control plane (and types from a state dir when no
// cluster answers); kubectl completes `kubectl kubediff ...` through the
// shipped kubectl_complete-kubediff.
func TestCompletionInARealBash(t *testing.T) {
	if _, err := os.Stat(bashCompletion); err != nil {
		t.Fatalf("no bash-completion (make shells installs Debian's package): %v", err)
	}
	ns, stateDir := stateDirWithOneRecord(t)
	bin := completionPath(t)
	script := filepath.Join(t.TempDir(), "kubediff.bash")
	out, err := exec.Command(kubediff, "completion", "bash").Output()
	if err != nil || os.WriteFile(script, out, 0o644) != nil {
		t.Fatalf("kubediff completion bash: %v", err)
	}
	tests := []struct {
		line string
		want []string
	}{
		{"kubediff watch configm", []string{"configmaps"}},
		{"kubediff get -n " + ns + " configmaps/sett", []string{"configmaps/settings"}},
		{"kubediff diff -n " + ns + " configmaps/", []string{"configmaps/settings"}},
		{"kubediff blame -n " + ns + " configmaps/se", []string{"configmaps/settings"}},
		{"kubediff restore -n " + ns + " configmaps/se", []string{"configmaps/settings"}},
		{"kubediff history deploym", []string{"deployments"}},
		{"kubediff history -n " + ns[:len(ns)-3], []string{ns}},
		{"kubediff watch --exclude-namespace " + ns[:len(ns)-3], []string{ns}},
		{"kubediff watch --resources deployments,configm", []string{"deployments,configmaps"}},
		{"kubediff history -o ", []string{"json", "text"}},
		{"kubediff get cm/x -o ", []string{"yaml", "json"}},
		{"kubediff watch -o ", []string{"json", "text", "none"}},
		{"kubediff resources -o ", []string{"table", "json"}},
		{"kubediff get cm/x --at 1", []string{"15m", "1h"}},
		{"kubediff history --since ", []string{"5m", "15m", "1h", "6h", "24h"}},
		{"kubediff history --severity w", []string{"warning"}},
		{"kubediff watch --context ", contextsOf(t)},
		{"kubediff diff cm/x --cluster ", contextsOf(t)},
		{"kubediff history --kubeconfig " + testsync.UnreachableKubeconfig(t, "127.0.0.1:1") + " --state-dir " + stateDir + " configm", []string{"configmaps"}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			if got := completeInBash(t, bin, script, tt.line); !slices.Equal(got, tt.want) {
				t.Errorf("%q completes to %q, want %q", tt.line, got, tt.want)
			}
		})
	}
	kubectlBin := filepath.Join(repoRoot(t), ".testenv", "bin", "kubectl")
	cmd := exec.Command(kubectlBin, "__complete", "kubediff", "get", "-n", ns, "configmaps/sett")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+env.Kubeconfig)
	if got, err := cmd.Output(); err != nil || !strings.HasPrefix(string(got), "configmaps/settings\n") {
		t.Errorf("kubectl __complete kubediff get configmaps/sett: %v\n%s", err, got)
	}
}

// completionPath is a directory for PATH with kubediff, kubectl-kubediff
// and the shipped kubectl_complete-kubediff, as make install lays them.
func completionPath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"kubediff", "kubectl-kubediff"} {
		if err := os.Symlink(kubediff, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(repoRoot(t), "hack", "plugin", "kubectl_complete-kubediff"), filepath.Join(dir, "kubectl_complete-kubediff")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// completeInBash asks bash, as Tab does, for the completions of line.
func completeInBash(t *testing.T, bin, script, line string) []string {
	t.Helper()
	program := `source ` + bashCompletion + `; source "$SCRIPT"
COMP_LINE="$LINE"; COMP_POINT=${#COMP_LINE}
read -ra COMP_WORDS <<< "$COMP_LINE"
[[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
__start_kubediff kubediff
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", program)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+env.Kubeconfig, "SCRIPT="+script, "LINE="+line)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	var words []string
	for w := range strings.Lines(string(out)) {
		if w = strings.TrimSpace(w); w != "" {
			words = append(words, strings.ReplaceAll(w, `\,`, ",")) // bash quotes what it inserts
		}
	}
	return words
}

// contextsOf lists the test kubeconfig's contexts.
func contextsOf(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command(filepath.Join(repoRoot(t), ".testenv", "bin", "kubectl"), "--kubeconfig", env.Kubeconfig, "config", "get-contexts", "-o", "name").Output()
	if err != nil {
		t.Fatal(err)
	}
	contexts := strings.Fields(string(out))
	slices.Sort(contexts)
	return contexts
}
