package e2e

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
	script := completionScript(t, "bash")
	checkCompletions(t, ns, stateDir, func(t *testing.T, line string) []string {
		return completeInBash(t, bin, script, line)
	})
	kubectlBin := filepath.Join(repoRoot(t), ".testenv", "bin", "kubectl")
	cmd := exec.Command(kubectlBin, "__complete", "kubediff", "get", "-n", ns, "configmaps/sett")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+env.Kubeconfig)
	if got, err := cmd.Output(); err != nil || !strings.HasPrefix(string(got), "configmaps/settings\n") {
		t.Errorf("kubectl __complete kubediff get configmaps/sett: %v\n%s", err, got)
	}
}

// TestCompletionInARealZsh: an interactive zsh, with compinit run and the
// script `kubediff completion zsh` writes sourced, offers on Tab the same
// types, objects, namespaces, contexts, output formats and TIMEs as bash.
func TestCompletionInARealZsh(t *testing.T) {
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Fatalf("no zsh (make shells installs Debian's package): %v", err)
	}
	ns, stateDir := stateDirWithOneRecord(t)
	bin := completionPath(t)
	script := completionScript(t, "zsh")
	checkCompletions(t, ns, stateDir, func(t *testing.T, line string) []string {
		return completeInZsh(t, bin, script, line)
	})
}

// checkCompletions has a shell, through complete, complete each of
// completionCases and checks that it offers exactly what the case wants.
func checkCompletions(t *testing.T, ns, stateDir string, complete func(t *testing.T, line string) []string) {
	t.Helper()
	for _, tt := range completionCases(t, ns, stateDir) {
		t.Run(tt.line, func(t *testing.T) {
			if got := complete(t, tt.line); !slices.Equal(got, tt.want) {
				t.Errorf("%q completes to %q, want %q", tt.line, got, tt.want)
			}
		})
	}
}

// completionCase is a command line and what Tab at its end must offer.
type completionCase struct {
	line string
	want []string
}

// completionCases are the lines every tested shell completes, ns being a
// namespace with configmaps/settings in the cluster and stateDir a state
// dir holding one record.
func completionCases(t *testing.T, ns, stateDir string) []completionCase {
	t.Helper()
	return []completionCase{
		{"kubediff watch configm", []string{"configmaps"}},
		{"kubediff get -n " + ns + " configmaps/sett", []string{"configmaps/settings"}},
		{"kubediff diff -n " + ns + " configmaps/", []string{"configmaps/settings"}},
		{"kubediff blame -n " + ns + " configmaps/se", []string{"configmaps/settings"}},
		{"kubediff restore -n " + ns + " configmaps/se", []string{"configmaps/settings"}},
		{"kubediff get -n " + ns + " configmaps/nosuch", nil},
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
}

// completionScript writes the script `kubediff completion SHELL` prints to
// a file, for the shell to source.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "kubediff."+shell)
	out, err := exec.Command(kubediff, "completion", shell).Output()
	if err != nil {
		t.Fatalf("kubediff completion %s: %v", shell, err)
	}
	if err := os.WriteFile(script, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return script
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

// zshSetup is what the interactive zsh sources before Tab: compinit, the
// script under test ($SCRIPT), and a compadd that also appends each match
// it adds to $OUT. Calls that only collect matches (-O, -A, -D) pass
// through. The markers it prints tell zshDriver when setup and completion
// are over; they are printed in two pieces so that no echo of input shows
// them early.
const zshSetup = `PS1= RPS1= PS2=
autoload -Uz compinit && compinit -u -D
source "$SCRIPT"
bindkey '^I' complete-word
compadd() {
	if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
		builtin compadd "$@"
		return
	fi
	local -a matches
	builtin compadd -A matches "$@"
	(( $#matches )) && print -rl -- $matches >> "$OUT"
	builtin compadd "$@"
}
completion-done() {
	compstate[list]= compstate[insert]=
	print -r -- COMPLETION-""DONE
}
comppostfuncs=(completion-done)
print -r -- SETUP-""DONE
`

// zshDriver runs an interactive zsh in a pseudo-terminal (zsh's own
// zsh/zpty module), has it source $SETUP, types $LINE and Tab, and waits
// for each marker, printing what the terminal showed for a failure to
// quote.
const zshDriver = `zmodload zsh/zpty || exit 1
zpty shell zsh -f -i
zpty -w shell "source ${(q)SETUP}"
read-until() {
	local out
	while zpty -r shell out; do
		print -rn -- "$out"
		[[ $out == *$1* ]] && return
	done
	return 1
}
read-until SETUP-DONE || exit 2
zpty -w -n shell "$LINE"$'\t'
read-until COMPLETION-DONE || exit 3
zpty -d shell
`

// completeInZsh asks an interactive zsh, as Tab does, for the matches it
// offers for line.
func completeInZsh(t *testing.T, bin, script, line string) []string {
	t.Helper()
	dir := t.TempDir() // and the working directory: no files to offer
	setup, matches := filepath.Join(dir, "setup.zsh"), filepath.Join(dir, "matches")
	if err := os.WriteFile(setup, []byte(zshSetup), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "zsh", "-f", "-c", zshDriver)
	cmd.Dir, cmd.WaitDelay = dir, 10*time.Second
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+env.Kubeconfig, "TERM=dumb",
		"SCRIPT="+script, "SETUP="+setup, "OUT="+matches, "LINE="+line)
	screen, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("zsh did not finish completing %q within %v; its terminal showed:\n%q", line, deadline, screen)
	} else if err != nil {
		t.Fatalf("zsh completing %q: %v; its terminal showed:\n%q", line, err, screen)
	}
	out, err := os.ReadFile(matches)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}
