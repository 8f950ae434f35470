// Command auditcost measures what the audit policy kubediff needs
// (deploy/audit/policy.yaml) costs the API server: the latency of writes
// and the server's CPU per write, through kube-apiservers on one etcd
// started side by side with no audit, with the policy and the webhook
// backend posting to kubediff's audit webhook, with the webhook pointed
// at a port nobody listens on (kubediff stopped), at one that never
// answers (kubediff hung), and with the policy and a log file. The
// servers take turns, a batch of writes each, so that the machine's load
// falls on each alike. docs/identity.md shows the figures.
//
//	go run ./hack/auditcost -writes 2000
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/auditwebhook"
)

func main() {
	writes := flag.Int("writes", 2000, "writes (Deployment patches) through each API server")
	rounds := flag.Int("rounds", 10, "turns the servers take")
	flag.Parse()
	if err := run(*writes, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "auditcost:", err)
		os.Exit(1)
	}
}

// server is one API server under measurement.
type server struct {
	name      string
	api       *testenv.APIServer
	client    *kubernetes.Clientset
	latencies []time.Duration
	cpu       time.Duration
}

// counter counts the writes kubediff's audit webhook notes.
type counter struct{ n atomic.Int64 }

func (c *counter) Note(identity.Write) { c.n.Add(1) }

func run(writes, rounds int) error {
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	dir, err := os.MkdirTemp("", "auditcost-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	noted := &counter{}
	servers, stop, err := startServers(env, dir, noted)
	defer stop()
	if err != nil {
		return err
	}
	for _, s := range servers {
		if err := s.prepare(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	batch := writes / rounds
	for range rounds {
		for _, s := range servers {
			if err := s.write(batch); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
		}
	}
	time.Sleep(3 * time.Second) // the last webhook batch
	fmt.Printf("%d writes (merge patches of a Deployment, one at a time) through each server, in %d turns\n\n", batch*rounds, rounds)
	fmt.Println("| API server | write p50 | write p99 | API server CPU per write |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, s := range servers {
		fmt.Printf("| %s | %s | %s | %s |\n", s.name, percentile(s.latencies, 50), percentile(s.latencies, 99), s.cpu/time.Duration(len(s.latencies)))
	}
	fmt.Printf("\nkubediff's audit webhook noted %d writes\n", noted.n.Load())
	return nil
}

// startServers starts the API servers to compare and kubediff's webhook.
func startServers(env *testenv.Env, dir string, noted identity.Noter) ([]*server, func(), error) {
	var stops []func()
	stop := func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
	}
	files, err := testenv.NewAuditTLS(dir)
	if err != nil {
		return nil, stop, err
	}
	hook, err := auditwebhook.Start(auditwebhook.Config{Address: "127.0.0.1:0", CertFile: files.ServingCert, KeyFile: files.ServingKey, TokenFile: files.TokenFile},
		noted, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, hook.Stop)
	hung, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() { hung.Close() })
	policy, err := filepath.Abs(filepath.Join("deploy", "audit", "policy.yaml"))
	if err != nil {
		return nil, stop, err
	}
	webhook := func(name, addr string) testenv.AuditOptions {
		path := filepath.Join(dir, name+".kubeconfig")
		_ = testenv.WriteWebhookKubeconfig(path, "https://"+addr+"/audit", files.ServingCA, "", "", files.Token)
		return testenv.AuditOptions{PolicyFile: policy, WebhookConfigFile: path, BatchMaxWait: time.Second}
	}
	plain, err := env.StartSecondAPIServer()
	if err != nil {
		return nil, stop, err
	}
	servers := []*server{{name: "no audit", api: plain}}
	for _, c := range []struct {
		name string
		opts testenv.AuditOptions
	}{
		{"policy + webhook to kubediff", webhook("on", hook.Addr())},
		{"policy + webhook, kubediff stopped", webhook("down", closedAddress())},
		{"policy + webhook, kubediff hung", webhook("hung", hung.Addr().String())},
		{"policy + log file", testenv.AuditOptions{PolicyFile: policy, LogPath: filepath.Join(dir, "audit.log")}},
	} {
		api, err := env.StartAuditedAPIServer(c.opts)
		if err != nil {
			return nil, stop, fmt.Errorf("%s: %w", c.name, err)
		}
		servers = append(servers, &server{name: c.name, api: api})
	}
	for _, s := range servers {
		cfg, err := clientcmd.BuildConfigFromFlags("", s.api.Kubeconfig)
		if err != nil {
			return nil, stop, err
		}
		cfg.QPS, cfg.Burst = 10000, 10000
		s.client = kubernetes.NewForConfigOrDie(cfg)
	}
	return servers, stop, nil
}

// closedAddress is an address nobody listens on.
func closedAddress() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:1"
	}
	defer ln.Close()
	return ln.Addr().String()
}

// namespace is where each server's Deployment lives.
const namespace = "auditcost"

// prepare makes the server's Deployment.
func (s *server) prepare() error {
	ctx := context.Background()
	_, _ = s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	labels := map[string]string{"app": s.deploymentName()}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: s.deploymentName()}, Spec: appsv1.DeploymentSpec{
		Replicas: new(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
	_, err := s.client.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{})
	return err
}

func (s *server) deploymentName() string {
	return strings.NewReplacer(" ", "", "+", "-", ",", "").Replace(s.name)
}

// write patches the server's Deployment n times, one at a time, timing
// each and the server's CPU over them.
func (s *server) write(n int) error {
	ctx := context.Background()
	before, err := processCPU(s.api.Pid())
	if err != nil {
		return err
	}
	for i := range n {
		patch := []byte(`{"metadata":{"annotations":{"example.com/n":"` + strconv.Itoa(len(s.latencies)+i) + `"}}}`)
		start := time.Now()
		if _, err := s.client.AppsV1().Deployments(namespace).Patch(ctx, s.deploymentName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return err
		}
		s.latencies = append(s.latencies, time.Since(start))
	}
	after, err := processCPU(s.api.Pid())
	s.cpu += after - before
	return err
}

// processCPU is the user and system time a process has used.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	// utime and stime are fields 14 and 15 of stat, 12 and 13 after comm
	// and state; in clock ticks of 1/100 s (USER_HZ on Linux).
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected fields", pid)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[(len(s)-1)*p/100].Round(10 * time.Microsecond)
}
