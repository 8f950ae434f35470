// Package scenario is a day in the life of a cluster, played with kubectl
// against a living local cluster (internal/testenv StartLiving): a
// Deployment created, rolled out and scaled, a config file edited in a
// ConfigMap, a crash-looping Pod, a node cordoned and drained, a custom
// resource created and deleted. The e2e tests and the benchmark share it,
// so the record counts they assert and publish come from the same steps.
package scenario

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Namespace is where the scenario's objects live.
const Namespace = "day"

// Replicas is the size of the scenario's Deployment.
const Replicas = 10

// Step is one action a person takes, and how to tell it is done.
type Step struct {
	// Name says what the step does, as the docs' table lists it.
	Name string
	// Run takes the action.
	Run func(ctx context.Context) error
	// Done returns when what the action set off has finished (a rollout
	// complete, Pods gone); the caller then waits for the cluster to
	// settle.
	Done func(ctx context.Context) error
}

// Kubectl runs kubectl against one cluster.
type Kubectl struct {
	Path, Kubeconfig string
}

// Run runs kubectl with args (and stdin, when given) and returns its
// output, or an error with what it printed.
func (k Kubectl) Run(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.Path, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func (k Kubectl) do(args ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := k.Run(ctx, "", args...)
		return err
	}
}

func (k Kubectl) apply(manifest string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := k.Run(ctx, manifest, "apply", "-f", "-")
		return err
	}
}

// Setup creates what the steps need before kubediff starts: the
// namespace, a Service in front of the Deployment (so EndpointSlices
// follow its Pods, as in any real cluster), the ConfigMap holding a config
// file, and a CRD.
func Setup(ctx context.Context, k Kubectl) error {
	for _, manifest := range []string{namespace, service, nginxConfigMap(0), crd} {
		if err := k.apply(manifest)(ctx); err != nil {
			return err
		}
	}
	return k.do("wait", "--for=condition=established", "--timeout=60s", "crd/gadgets.scenario.kubediff.io")(ctx)
}

// Steps are the day's actions, in order. node is the node to drain.
func Steps(k Kubectl, node string) []Step {
	ns := []string{"-n", Namespace}
	// rolledOut waits for the rollout and for the old Pods to be gone:
	// their graceful deletion outlasts `rollout status`.
	rolledOut := func(replicas int) func(context.Context) error {
		return func(ctx context.Context) error {
			if _, err := k.Run(ctx, "", append(ns, "rollout", "status", "deployment/web", "--timeout=180s")...); err != nil {
				return err
			}
			return podsLeft(k, "app=web", replicas)(ctx)
		}
	}
	return []Step{
		{
			Name: fmt.Sprintf("create a Deployment of %d replicas", Replicas),
			Run:  k.do(append(ns, "create", "deployment", "web", "--image=nginx:1.27", fmt.Sprintf("--replicas=%d", Replicas))...),
			Done: rolledOut(Replicas),
		},
		{
			Name: "roll out a new image",
			Run:  k.do(append(ns, "set", "image", "deployment/web", "nginx=nginx:1.28")...),
			Done: rolledOut(Replicas),
		},
		{
			Name: "scale 10 → 3",
			Run:  k.do(append(ns, "scale", "deployment/web", "--replicas=3")...),
			Done: rolledOut(3),
		},
		{
			Name: "edit one line of a config file in a ConfigMap",
			Run:  k.apply(nginxConfigMap(1)),
		},
		{
			Name: "a Pod crash-loops (two restarts), then is deleted",
			Run:  k.apply(crashLoopPod),
			Done: func(ctx context.Context) error {
				if err := restarted(k, "crasher", 2)(ctx); err != nil {
					return err
				}
				return k.do(append(ns, "delete", "pod", "crasher", "--wait=true", "--timeout=60s")...)(ctx)
			},
		},
		{
			Name: "cordon and drain a node",
			Run: func(ctx context.Context) error {
				if err := k.do("cordon", node)(ctx); err != nil {
					return err
				}
				return k.do("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=120s")(ctx)
			},
			Done: rolledOut(3),
		},
		{
			Name: "create a custom resource",
			Run:  k.apply(gadget),
		},
		{
			Name: "delete the custom resource",
			Run:  k.do(append(ns, "delete", "gadget", "sprocket")...),
		},
	}
}

// podsLeft waits until exactly n Pods match the selector.
func podsLeft(k Kubectl, selector string, n int) func(context.Context) error {
	return func(ctx context.Context) error {
		return poll(ctx, func() (bool, error) {
			out, err := k.Run(ctx, "", "-n", Namespace, "get", "pods", "-l", selector, "-o", "name")
			return len(strings.Fields(out)) == n, err
		})
	}
}

// restarted waits until the Pod's first container has restarted n times.
func restarted(k Kubectl, pod string, n int) func(context.Context) error {
	return func(ctx context.Context) error {
		return poll(ctx, func() (bool, error) {
			out, err := k.Run(ctx, "", "-n", Namespace, "get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
			return strings.TrimSpace(out) == fmt.Sprint(n), err
		})
	}
}

func poll(ctx context.Context, done func() (bool, error)) error {
	for {
		ok, err := done()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

const namespace = `apiVersion: v1
kind: Namespace
metadata: {name: ` + Namespace + `}
`

// nginxConfigMap holds a 33-line nginx.conf; version v changes one line.
func nginxConfigMap(v int) string {
	var conf strings.Builder
	conf.WriteString("    server {\n      listen 80;\n")
	for i := range 7 {
		fmt.Fprintf(&conf, "      location /app%d {\n        proxy_pass http://app%d:8080;\n        proxy_read_timeout 30s;\n      }\n", i, i)
	}
	conf.WriteString("    }\n")
	text := conf.String()
	if v > 0 {
		text = strings.Replace(text, "proxy_pass http://app3:8080;", "proxy_pass http://app3-canary:8080;", 1)
	}
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: nginx, namespace: ` + Namespace + `}
data:
  nginx.conf: |
` + text
}

const service = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: ` + Namespace + `}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`

const crashLoopPod = `apiVersion: v1
kind: Pod
metadata:
  name: crasher
  namespace: ` + Namespace + `
  labels: {app: crasher, kubediff.io/crash-loop: "true"}
spec:
  containers:
  - {name: app, image: busybox:1.36}
`

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.scenario.kubediff.io}
spec:
  group: scenario.kubediff.io
  names: {kind: Gadget, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`

const gadget = `apiVersion: scenario.kubediff.io/v1
kind: Gadget
metadata: {name: sprocket, namespace: ` + Namespace + `}
spec: {teeth: 12}
`
