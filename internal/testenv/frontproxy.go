package testenv

import (
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubediff/kubediff/internal/testcert"
)

// FrontProxyName is the common name of the client certificate the API
// server's aggregator presents to aggregated APIs, as kubeadm names it.
const FrontProxyName = "front-proxy-client"

// configureFrontProxy gives the API server what a cluster's API server has
// for aggregated APIs (metrics-server, kubediff's history): a front-proxy
// CA, the client certificate it signs for the aggregator, and the request
// header flags, which the API server publishes in kube-system's
// extension-apiserver-authentication ConfigMap.
func configureFrontProxy(env *envtest.Environment, dir string) error {
	ca, err := testcert.New("front-proxy-ca", nil)
	if err != nil {
		return err
	}
	client, err := testcert.New(FrontProxyName, ca)
	if err != nil {
		return err
	}
	if err := ca.WriteFiles(dir, "front-proxy-ca"); err != nil {
		return err
	}
	if err := client.WriteFiles(dir, FrontProxyName); err != nil {
		return err
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Set("requestheader-client-ca-file", filepath.Join(dir, "front-proxy-ca.crt"))
	args.Set("requestheader-allowed-names", FrontProxyName)
	args.Set("requestheader-username-headers", "X-Remote-User")
	args.Set("requestheader-group-headers", "X-Remote-Group")
	args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	args.Set("proxy-client-cert-file", filepath.Join(dir, FrontProxyName+".crt"))
	args.Set("proxy-client-key-file", filepath.Join(dir, FrontProxyName+".key"))
	return nil
}
