// Package testenv starts a real kube-apiserver and etcd on this machine
// (through controller-runtime's envtest) for kubediff's end-to-end tests,
// demo and benchmarks. The binaries come from `make testenv`, which builds
// them from Go modules into .testenv/bin.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Env is a running control plane.
type Env struct {
	// Config authenticates as a cluster administrator (system:masters).
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for Config.
	Kubeconfig string
	// Kubectl is the path of the kubectl binary built beside the server.
	Kubectl string

	env     *envtest.Environment
	dir     string
	procs   []process    // the living cluster's, when started
	seconds []*APIServer // from StartSecondAPIServer
	// firstAPIServer is the process id of envtest's kube-apiserver.
	firstAPIServer int
}

// process is one living-cluster process and its log file.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// BinDir returns where the control plane binaries are: KUBEBUILDER_ASSETS
// when set, else .testenv/bin at the top of the repository.
func BinDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "hack", "testenv")); err == nil {
				return filepath.Join(dir, ".testenv", "bin"), nil
			}
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("cannot find the repository root (go.mod beside hack/testenv) above " + wd)
		}
	}
}

// Start starts etcd and kube-apiserver and writes an admin kubeconfig.
func Start() (*Env, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, fmt.Errorf("control plane binary %s missing in %s: run `make testenv` first", name, bin)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		// A loaded 2-core machine can take longer than the 20 s default.
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	// For measurements of alpha wire formats (hack/bench: CBOR): the API
	// server's feature gates, as its --feature-gates flag takes them.
	if gates := os.Getenv("KUBEDIFF_TESTENV_FEATURE_GATES"); gates != "" {
		env.ControlPlane.GetAPIServer().Configure().Set("feature-gates", gates)
	}
	e := &Env{env: env, Kubectl: filepath.Join(bin, "kubectl")}
	if e.dir, err = os.MkdirTemp("", "kubediff-testenv-"); err != nil {
		return nil, err
	}
	if err := configureFrontProxy(env, e.dir); err != nil {
		return nil, fmt.Errorf("front proxy certificates: %w", err)
	}
	if _, err := env.Start(); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	servers := childrenNamed("kube-apiserver")
	if len(servers) == 1 {
		e.firstAPIServer = servers[0]
	}
	reapWithUs(append(childrenNamed("etcd"), servers...))
	if err := e.writeKubeconfig(); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) writeKubeconfig() error {
	user, err := e.env.AddUser(envtest.User{Name: "kubediff-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("add admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	e.Config = user.Config()
	return os.WriteFile(e.Kubeconfig, kc, 0o600)
}

// AddUser writes a kubeconfig for a user authenticated by client
// certificate, with no permissions beyond what RBAC grants it, and returns
// its path.
func (e *Env) AddUser(name string, groups ...string) (string, error) {
	user, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", fmt.Errorf("add user %s: %w", name, err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.dir, "kubeconfig-"+name)
	return path, os.WriteFile(path, kc, 0o600)
}

// Stop stops the control plane and removes the kubeconfig.
func (e *Env) Stop() error {
	for _, s := range e.seconds {
		s.stop()
	}
	e.stopProcesses()
	err := e.env.Stop()
	if e.dir != "" {
		err = errors.Join(err, os.RemoveAll(e.dir))
	}
	return err
}
