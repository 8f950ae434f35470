package testenv

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// StartUI runs the kubediff binary's `ui` with args, and the environment
// with more variables, until the test ends, and returns the URL it
// prints (failing t when none comes within wait).
func StartUI(t testing.TB, binary string, wait time.Duration, environment []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"ui"}, args...)...)
	cmd.Env = append(os.Environ(), environment...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("kubediff ui %v: stderr:\n%s", args, stderr.String())
		}
	})
	urls := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		urls <- strings.TrimSpace(strings.TrimPrefix(line, "kubediff history: "))
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case url := <-urls:
		if !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("kubediff ui printed %q; stderr:\n%s", url, stderr.String())
		}
		return url
	case <-time.After(wait):
		t.Fatalf("kubediff ui printed no URL; stderr:\n%s", stderr.String())
	}
	return ""
}

// Bearer sends Token on every request, as a Kubernetes client would.
type Bearer struct {
	Token string
	Next  http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return b.Next.RoundTrip(r)
}
