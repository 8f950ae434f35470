package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubediff/kubediff/internal/testenv"
)

// TestEveryExampleRunsAsWritten runs every command the README's sh
// blocks show after its first screen (TestReadmeFirstScreen runs that)
// and every command of every `kubediff CMD --help` Examples section, as
// written, in a person's shell: a fresh HOME, kubediff, kubectl, helm and
// jq on PATH, a kubeconfig whose current context (and the dev and prod
// the README names) is the local control plane, a `kubediff watch` left
// running (its history in the default state dir, its API on
// 127.0.0.1:8080), and the shop and prod namespaces' deploy/web and
// cm/settings the examples ask about. Each must exit 0; a watch must
// print a change made while it runs and stop at Ctrl-C.
func TestEveryExampleRunsAsWritten(t *testing.T) {
	s := newExampleShell(t)
	commands := append(readmeExampleCommands(t), helpExampleCommands(t, s)...)
	if len(commands) < 30 {
		t.Fatalf("found only %d example commands: %q", len(commands), commands)
	}
	s.startBackgroundWatch()
	s.change(t)
	// The examples ask about a minute ago: wait until the history holds it.
	testenv.Eventually(t, "the history to hold the moment a minute ago", 3*time.Minute, func() bool {
		_, err := s.output("kubediff get deploy web -n shop --at 1m", "")
		return err == nil
	})
	for _, command := range commands {
		t.Run(command, func(t *testing.T) { s.runExample(t, command) })
	}
}

// exampleShell is a person's shell for the examples.
type exampleShell struct {
	t          *testing.T
	home, dir  string
	env        []string
	background *exec.Cmd
	changes    int
	changed    time.Time // the last change's
}

func newExampleShell(t *testing.T) *exampleShell {
	t.Helper()
	s := &exampleShell{t: t, home: t.TempDir(), dir: t.TempDir()}
	bin := filepath.Join(s.home, "bin")
	links := map[string]string{
		filepath.Join(bin, "kubediff"): kubediff, filepath.Join(bin, "kubectl"): env.Kubectl,
		filepath.Join(bin, "helm"): filepath.Join(repoRoot(t), ".tools", "bin", "helm"),
		// A clone's working directory, whose files the examples name.
		filepath.Join(s.dir, "charts"): filepath.Join(repoRoot(t), "charts"), filepath.Join(s.dir, "config.example.yaml"): filepath.Join(repoRoot(t), "config.example.yaml"),
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(bin, "xdg-open"), "#!/bin/sh\nexit 0\n", 0o755)
	writeFile(t, filepath.Join(s.dir, "slack-token"), "xoxb-not-a-token\n", 0o600)
	writeFile(t, filepath.Join(s.dir, "my-values.yaml"), readmeBlock(t, "yaml", "# my-values.yaml"), 0o600)
	var inherited []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBEDIFF_") && !strings.HasPrefix(kv, "XDG_STATE_HOME=") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			inherited = append(inherited, kv)
		}
	}
	s.env = append(inherited, "HOME="+s.home, "PATH="+bin+":"+os.Getenv("PATH"),
		"KUBECONFIG="+personKubeconfig(t), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	// The README creates namespace kubediff: another test's must be gone
	// first, and this one is gone before the next test runs.
	removeNamespace(t, "kubediff")
	for _, ns := range []string{"shop", "prod"} {
		ensureNamespace(t, ns)
		createConfigMap(t, ns, "settings")
		kubectl(t, deploymentYAML(ns), "apply", "-f", "-")
	}
	t.Cleanup(func() {
		_, _ = s.output("helm uninstall kubediff --namespace kubediff", "")
		for _, ns := range []string{"shop", "prod", "kubediff"} {
			removeNamespace(t, ns)
		}
	})
	return s
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// deploymentYAML is the web Deployment the examples name.
func deploymentYAML(ns string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ` + ns + `}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: "nginx:1.27"}]}
`
}

// personKubeconfig is a kubeconfig as a person has one: a token (which
// --server sends; kind's client certificates need --via-apiserver, as the
// README says), the current context local, and the dev and prod contexts
// the README watches, all the local control plane.
func personKubeconfig(t *testing.T) string {
	t.Helper()
	const ns, name = "kube-system", "example-person"
	if _, err := clients.CoreV1().ServiceAccounts(ns).Create(bg, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
	if _, err := clients.RbacV1().ClusterRoleBindings().Create(bg, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clients.RbacV1().ClusterRoleBindings().Delete(bg, name, metav1.DeleteOptions{})
		_ = clients.CoreV1().ServiceAccounts(ns).Delete(bg, name, metav1.DeleteOptions{})
	})
	tr, err := clients.CoreV1().ServiceAccounts(ns).CreateToken(bg, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cluster := cfg.Contexts[cfg.CurrentContext].Cluster
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"person": {Token: tr.Status.Token}}
	cfg.Contexts = map[string]*clientcmdapi.Context{}
	for _, name := range []string{"local", "dev", "prod"} {
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: "person"}
	}
	cfg.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// readmeBlock is the README's fenced block of lang whose first line is
// first.
func readmeBlock(t *testing.T, lang, first string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		if strings.HasPrefix(block[1], first+"\n") {
			return block[1]
		}
	}
	t.Fatalf("the README has no %s block starting %q", lang, first)
	return ""
}

// readmeExampleCommands are the command lines of the README's sh blocks
// after its first screen, without their comments.
func readmeExampleCommands(t *testing.T) []string {
	t.Helper()
	_, rest := readmeScreens(t)
	return shCommands(rest)
}

// readmeScreens are the README before its first "## " heading (the first
// screen) and after it.
func readmeScreens(t *testing.T) (first, rest string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ = strings.Cut(string(data), "\n## ")
	return first, rest
}

// shCommands are the command lines of markdown's sh blocks, without
// their comments.
func shCommands(markdown string) []string {
	var out []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(markdown, -1) {
		for line := range strings.Lines(block[1]) {
			line, _, _ = strings.Cut(line, "  #")
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
	}
	return out
}

// helpExampleCommands are the lines of every command's Examples section,
// as `kubediff CMD --help` prints them.
func helpExampleCommands(t *testing.T, s *exampleShell) []string {
	t.Helper()
	root, err := s.output("kubediff --help", "")
	if err != nil {
		t.Fatal(err)
	}
	_, list, _ := strings.Cut(root, "Available Commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	var out []string
	for line := range strings.Lines(list) {
		name := strings.Fields(line)[0]
		help, err := s.output("kubediff "+name+" --help", "")
		if err != nil {
			t.Fatal(err)
		}
		_, examples, found := strings.Cut(help, "\nExamples:\n")
		if !found {
			continue
		}
		examples, _, _ = strings.Cut(examples, "\n\n")
		for line := range strings.Lines(examples) {
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
	}
	return out
}

// output runs command in the shell with stdin to its end.
func (s *exampleShell) output(command, stdin string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir, cmd.Env, cmd.Stdin = s.dir, s.env, strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// change makes one of each change the examples look for: a ConfigMap
// patched in shop and prod, prod's Deployment scaled, a ConfigMap made
// and deleted in prod. At most one a second: a watch polled for its
// output is not flooded.
func (s *exampleShell) change(t *testing.T) {
	t.Helper()
	if time.Since(s.changed) < time.Second {
		return
	}
	s.changes++
	s.changed = time.Now()
	for _, ns := range []string{"shop", "prod"} {
		kubectl(t, "", "-n", ns, "patch", "configmap", "settings", "--type", "merge", "-p", fmt.Sprintf(`{"data":{"change":"%d"}}`, s.changes))
		kubectl(t, "", "-n", ns, "scale", "deployment", "web", fmt.Sprintf("--replicas=%d", 1+s.changes%3))
	}
	name := fmt.Sprintf("example-%d", s.changes)
	createConfigMap(t, "prod", name)
	kubectl(t, "", "-n", "prod", "delete", "configmap", name)
}

// startBackgroundWatch starts the person's `kubediff watch` in another
// terminal: the history the examples read, the --server they ask.
func (s *exampleShell) startBackgroundWatch() {
	s.t.Helper()
	cmd, stdout, stderr := s.start("kubediff watch")
	s.background = cmd
	eventually(s.t, "the background watch to serve 127.0.0.1:8080", func() bool {
		return strings.Contains(stderr.String(), "msg=watching")
	})
	_ = stdout
}

// stopBackgroundWatch stops it, as Ctrl-C does, so that a watch example
// may have the address and the default state dir.
func (s *exampleShell) stopBackgroundWatch() {
	s.t.Helper()
	interrupt(s.background)
	_ = s.background.Wait()
}

// start starts command in a process group of its own, as a terminal's
// foreground job.
func (s *exampleShell) start(command string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	s.t.Helper()
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir, cmd.Env = s.dir, s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd, stdout, stderr
}

// interrupt is Ctrl-C: SIGINT to the job's process group.
func interrupt(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }

// runExample runs one example as its kind wants.
func (s *exampleShell) runExample(t *testing.T, command string) {
	switch {
	case strings.HasPrefix(command, "make ") || strings.HasPrefix(command, "git clone") || strings.HasPrefix(command, "go install") ||
		strings.HasPrefix(command, "docker ") || strings.HasPrefix(command, "kubectl krew"):
		t.Skipf("building and installing: TestReadmeFirstScreen, test/dist and the Makefile's own tests")
	case strings.HasPrefix(command, "kubediff watch"):
		s.stopBackgroundWatch()
		defer s.startBackgroundWatch()
		s.runWatchExample(t, command)
	case strings.HasPrefix(command, "kubediff ui"):
		s.runUIExample(t, command)
	default:
		stdin := "y\n" // restore --apply's question
		if strings.HasPrefix(command, "kubediff mcp") {
			stdin = "" // MCP over a pipe that closes at once: it answers and exits
		}
		out, err := s.output(command, stdin)
		if err != nil {
			t.Errorf("%s: %v\n%s", command, err, out)
		}
	}
}

// runWatchExample starts a watch in a terminal (script(1)'s pseudo
// terminal: text on it, and jq at a pipe's end writes each line as it
// comes), makes changes until it prints one, and stops it with Ctrl-C
// typed into the terminal.
func (s *exampleShell) runWatchExample(t *testing.T, command string) {
	cmd := exec.Command("script", "-qefc", command, "/dev/null")
	// script(1) runs the command in $SHELL, or sh when none is set (as in
	// CI); sh's -c stays the terminal's foreground and dies of Ctrl-C with
	// 130 whatever kubediff returns. bash execs the command, as a person's
	// interactive shell would run it.
	cmd.Dir, cmd.Env = s.dir, append(slices.Clone(s.env), "SHELL=/bin/bash")
	keys, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	terminal := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = terminal, terminal
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	eventually(t, command+" to watch", func() bool { return strings.Contains(terminal.String(), "msg=watching") })
	eventually(t, command+" to print a change", func() bool {
		if printedRecord(terminal.String()) {
			return true
		}
		s.change(t)
		return false
	})
	if _, err := keys.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	err = cmd.Wait()
	if !strings.Contains(command, "|") && err != nil { // a pipe's reader dies of Ctrl-C too
		t.Errorf("%s, stopped with Ctrl-C: %v\n%s", command, err, terminal.String())
	}
	if strings.Contains(terminal.String(), "level=ERROR") {
		t.Errorf("%s logged an error:\n%s", command, terminal.String())
	}
}

// printedRecord reports whether a terminal shows, after the watch's
// "watching" log line, a line that is no log line: a record.
func printedRecord(terminal string) bool {
	_, after, _ := strings.Cut(terminal, "msg=watching")
	_, after, _ = strings.Cut(after, "\n")
	for line := range strings.Lines(after) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "time=") {
			return true
		}
	}
	return false
}

// runUIExample starts the page and reads the URL it prints.
func (s *exampleShell) runUIExample(t *testing.T, command string) {
	cmd := exec.Command("bash", "-c", "exec "+command)
	cmd.Dir, cmd.Env = s.dir, s.env
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "kubediff history: http://127.0.0.1:") {
		t.Errorf("%s printed %q, not the page's URL\n%s", command, line, stderr.String())
	}
}

// removeNamespace empties a namespace and removes it, as the namespace
// controller would (the e2e control plane runs none): deleting it alone
// leaves it terminating for ever, and a later test, or the README's
// `kubectl create namespace kubediff`, could not create it again. Its
// objects are deleted first: left behind, they would come back with the
// namespace (cluster_test.go applies deploy/base in kubediff).
func removeNamespace(t *testing.T, name string) {
	t.Helper()
	if _, err := clients.CoreV1().Namespaces().Get(bg, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return
	}
	kubectl(t, "", "-n", name, "delete", "deployments,services,serviceaccounts,roles,rolebindings,configmaps,secrets,leases.coordination.k8s.io",
		"--all", "--ignore-not-found", "--wait=false")
	_ = clients.CoreV1().Namespaces().Delete(bg, name, metav1.DeleteOptions{})
	eventually(t, "namespace "+name+" gone", func() bool {
		ns, err := clients.CoreV1().Namespaces().Get(bg, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true
		}
		if err == nil && len(ns.Spec.Finalizers) > 0 {
			ns.Spec.Finalizers = nil
			_, _ = clients.CoreV1().Namespaces().Finalize(bg, ns, metav1.UpdateOptions{})
		}
		return false
	})
}
