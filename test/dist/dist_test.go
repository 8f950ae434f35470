// Package dist checks `make dist`'s script: release archives, their
// checksums and the krew manifest agree, and the archived binary runs.
package dist

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewPlugin is krew's Plugin manifest (krew.googlecontainertools.github.com/v1alpha2).
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestDistArchivesChecksumsAndKrewManifestAgree builds this machine's
// platform and one other (the script's loop, not all six: each is a
// full build), then checks every archive against checksums.txt and the
// krew manifest, and runs the binary from this platform's archive.
func TestDistArchivesChecksumsAndKrewManifestAgree(t *testing.T) {
	here := runtime.GOOS + "/" + runtime.GOARCH
	out := t.TempDir()
	cmd := exec.Command("../../hack/dist.sh", "v9.9.9-test", "-s -w -X github.com/kubediff/kubediff/internal/cli.version=v9.9.9-test", out)
	cmd.Env = append(os.Environ(), "PLATFORMS="+here+" windows/arm64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/dist.sh: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "kubediff-9.9.9-test.tgz")); err != nil {
		t.Errorf("the Helm chart was not packaged with the release's version: %v", err)
	}
	sums := map[string]string{}
	b, err := os.ReadFile(filepath.Join(out, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		sum, name, _ := strings.Cut(line, "  ")
		sums[name] = sum
	}
	b, err = os.ReadFile(filepath.Join(out, "plugins", "kubediff.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var plugin krewPlugin
	if err := yaml.UnmarshalStrict(b, &plugin); err != nil {
		t.Fatalf("krew manifest: %v\n%s", err, b)
	}
	if plugin.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || plugin.Kind != "Plugin" || plugin.Metadata.Name != "kubediff" || plugin.Spec.Version != "v9.9.9-test" || len(plugin.Spec.Platforms) != 2 {
		t.Fatalf("krew manifest: %+v", plugin)
	}
	for _, p := range plugin.Spec.Platforms {
		name := filepath.Base(p.URI)
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("the manifest points at %s, which dist did not build: %v", name, err)
		}
		h := sha256.Sum256(data)
		if got := hex.EncodeToString(h[:]); got != p.SHA256 || got != sums[name] {
			t.Errorf("%s: sha256 %s, manifest says %s, checksums.txt %s", name, got, p.SHA256, sums[name])
		}
		if p.Selector.MatchLabels["os"]+"/"+p.Selector.MatchLabels["arch"] != here {
			continue
		}
		bin := filepath.Join(t.TempDir(), "kubectl-kubediff")
		extract(t, data, p.Bin, bin)
		v, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil || !strings.Contains(string(v), "v9.9.9-test") {
			t.Errorf("the archived binary, run as a plugin: %v\n%s", err, v)
		}
		// kubectl completes `kubectl kubediff ...` by running
		// kubectl_complete-kubediff from PATH.
		completer := filepath.Join(filepath.Dir(bin), "kubectl_complete-kubediff")
		extract(t, data, "kubectl_complete-kubediff", completer)
		complete := exec.Command(completer, "history", "-o", "")
		complete.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
		if words, err := complete.Output(); err != nil || !strings.HasPrefix(string(words), "json\ntext\n") {
			t.Errorf("the archived kubectl_complete-kubediff: %v\n%s", err, words)
		}
	}
}

// extract writes the archive's file name to path.
func extract(t *testing.T, archive []byte, name, path string) {
	t.Helper()
	gz, err := gzip.NewReader(strings.NewReader(string(archive)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the archive: %v", name, err)
		}
		if h.Name != name {
			continue
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		return
	}
}
