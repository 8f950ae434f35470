package testenv

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// SlackServer speaks the part of Slack's Web API kubediff uses
// (chat.postMessage), and records each message: Slack itself is not
// reachable from tests.
type SlackServer struct {
	mu    sync.Mutex
	posts []url.Values
}

func (s *SlackServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	s.mu.Lock()
	s.posts = append(s.posts, form)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"ok":true,"ts":"1.1"}`)
}

// Messages returns each message as its channel, a space, and its blocks'
// JSON.
func (s *SlackServer) Messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.posts {
		out = append(out, p.Get("channel")+" "+p.Get("blocks"))
	}
	return out
}

// Sections returns the text of every section block posted, in order: the
// lines a person reads in the channel (a record, or a folded burst).
func (s *SlackServer) Sections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.posts {
		var blocks []struct {
			Type string `json:"type"`
			Text struct {
				Text string `json:"text"`
			} `json:"text"`
		}
		_ = json.Unmarshal([]byte(p.Get("blocks")), &blocks)
		for _, b := range blocks {
			if b.Type == "section" {
				out = append(out, strings.ReplaceAll(b.Text.Text, "\n", " / "))
			}
		}
	}
	return out
}
