package testenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// APIServer is a second kube-apiserver on the control plane's etcd, for
// outage tests: changes go through the first server while this one is
// stopped, killed or restarted, and a kubediff pointed at it must catch up.
type APIServer struct {
	// Kubeconfig authenticates as the cluster administrator, at this server.
	Kubeconfig string
	// URL is the server's address.
	URL string

	path string
	args []string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	etcd *Etcd // its own, for another cluster (nil: the first one's)
}

// StartSecondAPIServer starts a kube-apiserver with the first one's
// flags (same etcd, certificates and users) on another port, and waits
// until it is ready.
func (e *Env) StartSecondAPIServer() (*APIServer, error) {
	s, err := e.secondAPIServer(fmt.Sprintf("second-%d", len(e.seconds)))
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	e.seconds = append(e.seconds, s)
	return s, nil
}

// StartAnotherCluster starts a kube-apiserver with the first one's flags
// on an etcd of its own: another cluster (its own kube-system namespace
// and UID), reached with the same credentials at another address.
func (e *Env) StartAnotherCluster() (*APIServer, error) {
	store, err := e.StartEtcd()
	if err != nil {
		return nil, err
	}
	s, err := e.secondAPIServer("another")
	if err != nil {
		store.Stop()
		return nil, err
	}
	s.UseEtcd(store.URL)
	s.etcd = store
	if err := s.Start(); err != nil {
		store.Stop()
		return nil, err
	}
	e.seconds = append(e.seconds, s)
	return s, nil
}

// secondAPIServer prepares a kube-apiserver with the first one's flags on
// a free port, and its kubeconfig, named after name.
func (e *Env) secondAPIServer(name string) (*APIServer, error) {
	path, args, err := e.firstAPIServerCommand()
	if err != nil {
		return nil, err
	}
	port := freePort()
	if port == 0 {
		return nil, errors.New("no free port for a second kube-apiserver")
	}
	var kept []string
	for _, a := range args {
		if strings.HasPrefix(a, "--secure-port=") || strings.HasPrefix(a, "--endpoint-reconciler-type=") {
			continue
		}
		kept = append(kept, a)
	}
	// One server keeps the kubernetes Service's endpoints, as in a cluster
	// whose other servers would each write their own address.
	kept = append(kept, "--secure-port="+strconv.Itoa(port), "--endpoint-reconciler-type=none")
	first := strings.TrimSuffix(e.Config.Host, "/")
	kc, err := os.ReadFile(e.Kubeconfig)
	if err != nil {
		return nil, err
	}
	s := &APIServer{URL: fmt.Sprintf("https://127.0.0.1:%d", port), path: path, args: kept,
		Kubeconfig: filepath.Join(e.dir, "kubeconfig-"+name), log: filepath.Join(e.dir, "kube-apiserver-"+name+".log")}
	if !bytes.Contains(kc, []byte(first)) {
		return nil, fmt.Errorf("kubeconfig does not name the first server %s", first)
	}
	if err := os.WriteFile(s.Kubeconfig, bytes.ReplaceAll(kc, []byte(first), []byte(s.URL)), 0o600); err != nil {
		return nil, err
	}
	return s, nil
}

// firstAPIServerCommand reads the command line of the kube-apiserver
// envtest started (it does not expose its final flags), by the process
// id noted at Start: the second servers are this process's children too.
func (e *Env) firstAPIServerCommand() (string, []string, error) {
	if e.firstAPIServer == 0 {
		return "", nil, errors.New("no kube-apiserver started by this process")
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(e.firstAPIServer), "cmdline"))
	if err != nil {
		return "", nil, err
	}
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return argv[0], argv[1:], nil
}

// Start starts the server (again) and waits until it is ready.
func (s *APIServer) Start() error {
	logFile, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.path, s.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start second kube-apiserver: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}(s.done)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for !s.Ready(ctx) {
		select {
		case <-s.done:
			return fmt.Errorf("second kube-apiserver exited; see %s", s.log)
		case <-ctx.Done():
			return fmt.Errorf("second kube-apiserver not ready within 90 s; see %s", s.log)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// Ready reports whether the server answers /readyz with 200. One try
// waits up to 10 s: a server just resumed (SIGCONT) on a loaded machine
// can take that long to finish a TLS handshake and answer.
func (s *APIServer) Ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
	if err != nil {
		return false
	}
	// Only whether it answers matters here, not who it is.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a local test server
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// LogOnFailure logs the end of the server's log when t fails: a server
// that lags or refuses says why there.
func (s *APIServer) LogOnFailure(t testing.TB) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		b, err := os.ReadFile(s.log)
		if err != nil {
			t.Logf("%s: %v", s.log, err)
			return
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("the end of %s:\n%s", s.log, strings.Join(lines[max(0, len(lines)-60):], "\n"))
	})
}

// Pause stops the process (SIGSTOP): connections stay open and hang, as
// with a partition.
func (s *APIServer) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (s *APIServer) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Kill kills the process and waits for it to be gone.
func (s *APIServer) Kill() error {
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-s.done
	return nil
}

// stop ends the server whatever its state, and its own etcd.
func (s *APIServer) stop() {
	if s.etcd != nil {
		defer s.etcd.Stop()
	}
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// TwoContexts writes a kubeconfig naming this control plane context alpha
// and other's server context beta (the same credentials), for kubediff
// watching several clusters.
func (e *Env) TwoContexts(other *APIServer) (string, error) {
	cfg, err := clientcmd.LoadFromFile(e.Kubeconfig)
	if err != nil {
		return "", err
	}
	current := cfg.Contexts[cfg.CurrentContext]
	if current == nil {
		return "", errors.New("the kubeconfig has no current context")
	}
	alpha, beta := *current, *current
	cluster := *cfg.Clusters[current.Cluster]
	cluster.Server = other.URL
	cfg.Clusters["beta"] = &cluster
	beta.Cluster = "beta"
	cfg.Contexts = map[string]*clientcmdapi.Context{"alpha": &alpha, "beta": &beta}
	cfg.CurrentContext = "alpha"
	path := filepath.Join(e.dir, "kubeconfig-two-contexts")
	return path, clientcmd.WriteToFile(*cfg, path)
}
