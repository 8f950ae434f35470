package testenv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubediff/kubediff/internal/testpg"
)

// Etcd is an etcd of its own, empty when started: the store of a cluster
// rebuilt, or restored, under a running kubediff.
type Etcd struct {
	// URL is its client address.
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartEtcd starts an empty etcd on free loopback ports.
func (e *Env) StartEtcd() (*Etcd, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	client, peer := freePort(), freePort()
	if client == 0 || peer == 0 {
		return nil, fmt.Errorf("no free port for etcd")
	}
	dir, err := os.MkdirTemp(e.dir, "etcd-")
	if err != nil {
		return nil, err
	}
	d := &Etcd{URL: fmt.Sprintf("http://127.0.0.1:%d", client), done: make(chan struct{})}
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	// The quota is etcd's 2 GiB by default: the benchmark's scale mode at
	// a million ConfigMaps holds more, and 8 GiB filled up with the
	// updates after them (2026-11-27). A quota is a bound, not space taken.
	d.cmd = exec.Command(filepath.Join(bin, "etcd"), "--data-dir", dir, "--unsafe-no-fsync", "--quota-backend-bytes", fmt.Sprint(int64(16)<<30),
		"--listen-client-urls", d.URL, "--advertise-client-urls", d.URL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL, "--initial-cluster", "default="+peerURL)
	logFile, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() { _ = d.cmd.Wait(); logFile.Close(); close(d.done) }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if resp, err := http.Get(d.URL + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d, nil
			}
		}
		select {
		case <-d.done:
			return nil, fmt.Errorf("etcd exited; see %s", logFile.Name())
		case <-ctx.Done():
			d.Stop()
			return nil, fmt.Errorf("etcd not healthy within 60 s; see %s", logFile.Name())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends the etcd.
func (d *Etcd) Stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// UseEtcd points the server at another etcd from its next Start: stopped
// and started again, it serves another cluster at the same address.
func (s *APIServer) UseEtcd(url string) {
	for i, a := range s.args {
		if strings.HasPrefix(a, "--etcd-servers=") {
			s.args[i] = "--etcd-servers=" + url
		}
	}
}

// freePort is a port on 127.0.0.1 nothing listens on now (0: none).
func freePort() int { return testpg.FreePort() }

// Revision returns the etcd's current revision (what the API server calls
// a resourceVersion).
func (d *Etcd) Revision() (int64, error) {
	var out struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := d.post("/v3/kv/range", map[string]string{"key": base64.StdEncoding.EncodeToString([]byte("/"))}, &out); err != nil {
		return 0, err
	}
	return strconv.ParseInt(out.Header.Revision, 10, 64)
}

// BumpRevision writes throwaway keys until the revision reaches to: a
// cluster rebuilt whose resourceVersions do not go back, so only its
// identity tells it from the one before.
func (d *Etcd) BumpRevision(to int64) error {
	for {
		rev, err := d.Revision()
		if err != nil || rev >= to {
			return err
		}
		for range min(to-rev, 500) {
			put := map[string]string{"key": base64.StdEncoding.EncodeToString([]byte("/bump")), "value": "eA=="}
			if err := d.post("/v3/kv/put", put, nil); err != nil {
				return err
			}
		}
	}
}

func (d *Etcd) post(path string, body any, out any) error {
	b, _ := json.Marshal(body)
	resp, err := http.Post(d.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s", path, resp.Status)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
