package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/internal/testcert"
	"github.com/kubediff/kubediff/internal/testpg"
)

// storeValues are the chart's values for a history store at dsn, with
// its password and TLS files from the Secrets storeSecrets makes.
func storeValues(dsn string) string {
	return `
replicaCount: 1
config:
  output: json
history:
  store:
    dsn: ` + dsn + `
    password: {existingSecret: kubediff-db, key: db-password}
    tls: {existingSecret: kubediff-db-tls, clientCertificate: true}
`
}

// storeSecrets makes, in ns, the Secret holding the database's password
// and the one holding its CA and a client certificate.
func storeSecrets(t *testing.T, ns, password string, ca, client *testcert.Pair) {
	t.Helper()
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "kubediff-db"}, StringData: map[string]string{"db-password": password}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kubediff-db-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": client.CertPEM, "tls.key": client.KeyPEM}},
	} {
		if _, err := clients.CoreV1().Secrets(ns).Create(bg, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHelmChartKeepsTheHistoryInAStore: with history.store, the chart
// gives kubediff the DSN in its config file, the password as a file
// from an existing Secret (in no rendered manifest, no environment
// variable), the database's CA and a client certificate through libpq's
// PGSSLROOTCERT, PGSSLCERT and PGSSLKEY with PGSSLMODE verify-full, and
// an emptyDir for the state dir in a Deployment. kubediff run with what
// the kubelet would give that Pod (the Secrets' files at their mounts,
// the environment) writes its records to a real PostgreSQL that takes
// only TLS connections with a password, and `kubediff history
// --history-store` reads them back.
func TestHelmChartKeepsTheHistoryInAStore(t *testing.T) {
	const password = "pg-canary-5518-from-a-secret"
	ca, server, client := storeCerts(t)
	pg := testpg.StartPostgresWithPassword(t, password)
	onlyTLS(t, pg, password, server)
	ns := newNamespace(t)
	storeSecrets(t, ns, password, ca, client)
	dsn := fmt.Sprintf("postgres://kubediff@127.0.0.1:%d/postgres", pg.Port)

	manifests, err := renderChart(t, ns, storeValues(dsn))
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, manifests)
	}
	if strings.Contains(manifests, password) {
		t.Fatal("the database's password appears in the rendered chart")
	}
	if !strings.Contains(manifests, "\nkind: Deployment\n") || strings.Contains(manifests, "volumeClaimTemplates") {
		t.Errorf("with a store and persistence off: want a Deployment without a claim per replica:\n%s", manifests)
	}
	spec := podSpecs(t, manifests)[0]
	checkStorePodSpec(t, spec)
	configText, err := os.ReadFile(renderedConfigFile(t, manifests))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		History struct{ Store, StorePasswordFile string }
		State   struct{ Dir string }
	}
	if err := yaml.Unmarshal(configText, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.History.Store != dsn || cfg.History.StorePasswordFile == "" {
		t.Fatalf("the config file's history: %+v, want store %s and a password file", cfg.History, dsn)
	}
	if mount := secretMountHolding(spec, cfg.History.StorePasswordFile); mount != "kubediff-db/db-password" {
		t.Errorf("history.storePasswordFile %s is %q, want the key db-password of Secret kubediff-db", cfg.History.StorePasswordFile, mount)
	}

	// The Pod as the kubelet would run it, in a directory standing for
	// its root: the Secrets' files where the volumes mount them.
	root := t.TempDir()
	environment := asTheKubeletWould(t, ns, spec, root)
	configFile := filepath.Join(root, "config.yaml")
	rooted := strings.NewReplacer("/etc/kubediff/", root+"/etc/kubediff/", "/var/lib/kubediff", root+"/var/lib/kubediff").Replace(string(configText))
	if err := os.WriteFile(configFile, []byte(rooted), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startBinaryWithEnv(t, environment, "watch", "--config", configFile, "--log-format", "text", "-n", ns)
	w.logOnFailure()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept-in-postgres"}, Data: map[string]string{"k": "v"}}
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("ConfigMap", ns, "kept-in-postgres", 1)
	passwordFile := filepath.Join(root, "password")
	if err := os.WriteFile(passwordFile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	var out string
	var code int
	eventually(t, "the record in the database, read with `kubediff history --history-store`", func() bool {
		out, code = cliOutput(t, "history", "cm/kept-in-postgres", "-n", ns, "--history-store", dsn+"?sslmode=require", "--history-store-password-file", passwordFile)
		return code == 0 && strings.Contains(out, `"name":"kept-in-postgres"`)
	})
	w.shutdown()
	if strings.Contains(w.stdout.String()+w.stderr.String(), password) {
		t.Error("the password appears in kubediff's output")
	}
	if strings.Contains(w.stderr.String(), "history store: cannot write") {
		t.Errorf("kubediff could not write to the database at first:\n%s", w.stderr.String())
	}
}

// TestHelmChartInstallsWithAHistoryStore: `helm install` with a history
// store against the API server: the Deployment it stores runs kubediff
// with the password file and TLS files mounted from their Secrets, the
// TLS environment and an emptyDir, and the ConfigMap holds the DSN and
// no password. A DSN holding a password fails the install naming the
// key, without printing the password.
func TestHelmChartInstallsWithAHistoryStore(t *testing.T) {
	const password = "pg-canary-9031-never-in-helm"
	ns := newNamespace(t)
	ca, err := testcert.New("db-ca", nil)
	if err != nil {
		t.Fatal(err)
	}
	client, err := testcert.New("kubediff", ca)
	if err != nil {
		t.Fatal(err)
	}
	storeSecrets(t, ns, password, ca, client)
	chart := filepath.Join(repoRoot(t), "charts", "kubediff")
	values := filepath.Join(t.TempDir(), "values.yaml")
	const dsn = "postgres://kubediff@db.example:5432/kubediff"
	if err := os.WriteFile(values, []byte(storeValues(dsn)), 0o600); err != nil {
		t.Fatal(err)
	}
	release := "store-" + ns[len(ns)-5:]
	out, err := helm(t, "install", release, chart, "--namespace", ns, "--kubeconfig", env.Kubeconfig, "-f", values)
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = helm(t, "uninstall", release, "--namespace", ns, "--kubeconfig", env.Kubeconfig) })

	name := release + "-kubediff"
	d, err := clients.AppsV1().Deployments(ns).Get(bg, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the installed Deployment: %v", err)
	}
	checkStorePodSpec(t, d.Spec.Template.Spec)
	cm, err := clients.CoreV1().ConfigMaps(ns).Get(bg, name+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if file := cm.Data["config.yaml"]; !strings.Contains(file, "store: "+dsn) || strings.Contains(file, password) {
		t.Errorf("the installed config file: want the store's DSN and no password:\n%s", file)
	}

	for _, bad := range []string{"postgres://kubediff:" + password + "@db.example:5432/kubediff", "host=db.example user=kubediff password=" + password} {
		out, err := helm(t, "install", release+"-pw", chart, "--namespace", ns, "--kubeconfig", env.Kubeconfig, "--set-string", "history.store.dsn="+bad)
		if err == nil || !strings.Contains(out, "/history/store/dsn") || strings.Contains(out, password) {
			t.Errorf("helm install with a DSN holding a password: err %v, output:\n%s\nwant a failure naming /history/store/dsn without the password", err, out)
		}
		out, err = helm(t, "template", release, chart, "--skip-schema-validation", "--set-string", "history.store.dsn="+bad)
		if err == nil || !strings.Contains(out, "history.store.dsn holds a password") || strings.Contains(out, password) {
			t.Errorf("helm template without the schema, a DSN holding a password: err %v, output:\n%s", err, out)
		}
	}
}

// checkStorePodSpec checks what the chart gives kubediff's container for
// storeValues: the TLS environment, the Secrets' volumes and an emptyDir
// for the state dir.
func checkStorePodSpec(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	c := spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Errorf("env %s is set from a Secret; the password goes as a file", e.Name)
		}
	}
	if env["PGSSLMODE"] != "verify-full" {
		t.Errorf("PGSSLMODE = %q, want verify-full with a CA", env["PGSSLMODE"])
	}
	for v, want := range map[string]string{"PGSSLROOTCERT": "kubediff-db-tls/ca.crt", "PGSSLCERT": "kubediff-db-tls/tls.crt", "PGSSLKEY": "kubediff-db-tls/tls.key"} {
		if got := secretMountHolding(spec, env[v]); got != want {
			t.Errorf("%s = %q is %q, want %s", v, env[v], got, want)
		}
	}
	for _, v := range spec.Volumes {
		if v.Name == "state" && (v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil) {
			t.Errorf("the state dir's volume: %+v, want an emptyDir with a size limit", v.VolumeSource)
		}
	}
}

// secretMountHolding says which Secret's key ("name/key") the container
// of spec finds at path, or "".
func secretMountHolding(spec corev1.PodSpec, path string) string {
	for _, m := range spec.Containers[0].VolumeMounts {
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			for _, item := range v.Secret.Items {
				if item.Path == rel {
					return v.Secret.SecretName + "/" + item.Key
				}
			}
			if len(v.Secret.Items) == 0 {
				return v.Secret.SecretName + "/" + rel
			}
		}
	}
	return ""
}

// asTheKubeletWould writes, under root, the files the Secret volumes of
// spec mount (from the Secrets in ns), and returns the container's
// environment variables with values, their paths under root too.
func asTheKubeletWould(t *testing.T, ns string, spec corev1.PodSpec, root string) []string {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range spec.Containers[0].VolumeMounts {
		v := volumes[m.Name]
		if v.Secret == nil {
			continue
		}
		s, err := clients.CoreV1().Secrets(ns).Get(bg, v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("volume %s names Secret %s: %v", v.Name, v.Secret.SecretName, err)
		}
		dir := filepath.Join(root, m.MountPath)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, item := range v.Secret.Items {
			data, ok := s.Data[item.Key]
			if !ok {
				t.Fatalf("volume %s: Secret %s has no key %s (the kubelet would not start the Pod)", v.Name, s.Name, item.Key)
			}
			if err := os.WriteFile(filepath.Join(dir, item.Path), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	var environment []string
	for _, e := range spec.Containers[0].Env {
		if e.ValueFrom == nil {
			environment = append(environment, e.Name+"="+strings.Replace(e.Value, "/etc/kubediff/", root+"/etc/kubediff/", 1))
		}
	}
	return environment
}

// storeCerts makes a CA, the database's serving certificate for
// 127.0.0.1 and kubediff's client certificate.
func storeCerts(t *testing.T) (ca, server, client *testcert.Pair) {
	t.Helper()
	var err error
	if ca, err = testcert.New("db-ca", nil); err != nil {
		t.Fatal(err)
	}
	if server, err = testcert.New("postgres", ca, net.IPv4(127, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if client, err = testcert.New("kubediff", ca); err != nil {
		t.Fatal(err)
	}
	return ca, server, client
}

// onlyTLS makes pg serve TLS with server's certificate and refuse every
// TCP connection that is not TLS, as a managed database does.
func onlyTLS(t *testing.T, pg *testpg.Postgres, password string, server *testcert.Pair) {
	t.Helper()
	ctx := context.Background()
	plain := fmt.Sprintf("postgres://kubediff:%s@127.0.0.1:%d/postgres?sslmode=disable", password, pg.Port)
	conn, err := pgx.Connect(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var dataDir, hbaFile string
	if err := conn.QueryRow(ctx, "SELECT current_setting('data_directory'), current_setting('hba_file')").Scan(&dataDir, &hbaFile); err != nil {
		t.Fatal(err)
	}
	owner, err := os.Stat(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	st := owner.Sys().(*syscall.Stat_t) // the server's user owns its data
	uid, gid := int(st.Uid), int(st.Gid)
	for name, data := range map[string][]byte{"server.crt": server.CertPEM, "server.key": server.KeyPEM,
		"pg_hba.conf": []byte("local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n")} {
		file := filepath.Join(dataDir, name)
		if name == "pg_hba.conf" {
			file = hbaFile
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(file, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET ssl = on"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "PostgreSQL to take TLS connections only", func() bool {
		if c, err := pgx.Connect(ctx, plain); err == nil {
			_ = c.Close(ctx)
			return false
		}
		c, err := pgx.Connect(ctx, strings.Replace(plain, "sslmode=disable", "sslmode=require", 1))
		if err != nil {
			return false
		}
		_ = c.Close(ctx)
		return true
	})
}
