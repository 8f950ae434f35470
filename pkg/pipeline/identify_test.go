package pipeline

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/release"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// named collects records as "NAME@VERSION by USER" (USER "-" when none).
type named struct {
	mu  sync.Mutex
	got []string
}

func (n *named) emit(_ watcher.Event, c record.Change, _ []identity.Hop) {
	user := "-"
	if c.User != nil {
		user = c.User.Name
	}
	n.add(fmt.Sprintf("%s@%s by %s", c.Name, c.ResourceVersion, user))
}

func (n *named) keepState(_ watcher.Event, c record.Change) { n.add("state " + c.Name) }

func (n *named) add(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, s)
}

func (n *named) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return fmt.Sprint(n.got)
}

// countedHolds counts each ref's holds not yet released.
type countedHolds struct{ held map[journal.Ref]int }

func (h *countedHolds) Hold(r journal.Ref)                        { h.held[r]++ }
func (h *countedHolds) Release(r journal.Ref, _ ...journal.Entry) { h.held[r]-- }

// configMapWrite is a ConfigMap's write from version from to to, with its record.
func configMapWrite(name string, from, to int) (watcher.Event, record.Change) {
	ev := watcher.Event{Note: &journal.Note{Ref: journal.Ref{Target: "configmaps", Key: name}}}
	ev.Resource = replicaSets
	ev.Resource.GVR.Resource, ev.Resource.GVR.Group = "configmaps", ""
	ev.Old = replicaSet(name, from, 1)
	c := record.Change{Type: record.Updated, Kind: "ConfigMap", Namespace: "day", Name: name, UID: name, ResourceVersion: fmt.Sprint(to)}
	return ev, c
}

func wrote(book *identity.Book, user, uid string, to int) {
	book.Note(identity.Write{ID: fmt.Sprint(uid, to), User: identity.NewUser(user, nil), Verb: "update",
		Resource: "configmaps", Namespace: "day", Name: uid, UID: uid, ResourceVersion: fmt.Sprint(to)})
}

func TestIdentifyWaitsForWhoMadeARecordInItsObjectsOrder(t *testing.T) {
	book, out, holds := identity.NewBook(), &named{}, &countedHolds{held: map[journal.Ref]int{}}
	s := newIdentify(book, 2*time.Second, out, holds)
	now := time.Unix(0, 0)
	s.now = func() time.Time { return now }
	one := func(ev watcher.Event, c record.Change) { s.emit(ev, c, nil) }

	wrote(book, "alice", "a", 2)
	one(configMapWrite("a", 1, 2)) // noted before the watch delivered it: goes on at once
	one(configMapWrite("b", 1, 2)) // not noted yet: waits
	wrote(book, "bob", "b", 3)
	one(configMapWrite("b", 2, 3))         // noted, but behind b@2
	s.keepState(configMapWrite("b", 3, 4)) // a quiet state behind them too
	one(configMapWrite("c", 1, 2))         // never noted
	if got, want := out.String(), "[a@2 by alice]"; got != want {
		t.Fatalf("before anyone said who made b@2: %s, want %s", got, want)
	}
	if holds.held[journal.Ref{Target: "configmaps", Key: "b"}] != 3 {
		t.Fatalf("b's stored state is not held while its records wait: %v", holds.held)
	}
	wrote(book, "carol", "b", 2)
	s.releaseDue(false)
	if got, want := out.String(), "[a@2 by alice b@2 by carol b@3 by bob state b]"; got != want {
		t.Fatalf("once b@2's writer was noted: %s, want %s", got, want)
	}
	now = now.Add(2 * time.Second)
	s.releaseDue(false)
	if got, want := out.String(), "[a@2 by alice b@2 by carol b@3 by bob state b c@2 by -]"; got != want {
		t.Fatalf("after the wait: %s, want c@2 without a user: %s", got, want)
	}
	for ref, n := range holds.held {
		if n != 0 {
			t.Fatalf("%v: %d holds not released", ref, n)
		}
	}
	if len(s.waiting) != 0 {
		t.Fatalf("records still waiting: %v", s.waiting)
	}
}

func TestIdentifyNamesNoOneForWritesOfTwoUsers(t *testing.T) {
	book, out := identity.NewBook(), &named{}
	s := newIdentify(book, time.Minute, out, nil)
	wrote(book, "alice", "a", 2)
	ev, c := configMapWrite("a", 1, 3)
	s.emit(ev, c, []identity.Hop{{From: "1", To: "2"}, {From: "2", To: "3"}}) // a joined record
	wrote(book, "bob", "a", 3)
	s.releaseDue(false)
	if got, want := out.String(), "[a@3 by -]"; got != want {
		t.Fatalf("a record joining alice's and bob's writes: %s, want no user and no wait: %s", got, want)
	}
}

// released collects records as "NAME@VERSION rev REVISION" (0: no release named).
type released struct{ named }

func (r *released) emit(_ watcher.Event, c record.Change, _ []identity.Hop) {
	rev := 0
	if c.Release != nil {
		rev = c.Release.Revision
	}
	r.add(fmt.Sprintf("%s@%s rev %d", c.Name, c.ResourceVersion, rev))
}

// helmRevision is revision rev of release web as Helm's Secret, written at version rv.
func helmRevision(rev, rv int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"type": "helm.sh/release.v1", "metadata": map[string]any{"name": fmt.Sprint("sh.helm.release.v1.web.v", rev),
		"namespace": "day", "resourceVersion": fmt.Sprint(rv), "labels": map[string]any{"owner": "helm", "name": "web", "version": fmt.Sprint(rev), "status": "deployed"}}}}
}

// A record of Helm's write to an object of its release waits, up to its
// wait, for the Secrets' watch to reach its write: the revision Helm
// wrote just before it may come after it. Records of other objects, and
// of others' writes, pass.
func TestIdentifyWaitsForTheReleaseBeforeAWrite(t *testing.T) {
	book, out := release.NewBook(release.Options{}), &released{}
	s := newIdentify(nil, 0, out, nil)
	s.releases, s.releaseWait = book, 5*time.Second
	now := time.Unix(0, 0)
	s.now = func() time.Time { return now }
	one := func(ev watcher.Event, c record.Change) { s.emit(ev, c, nil) }
	helmWrite := func(name string, from, to int) (watcher.Event, record.Change) {
		ev, c := configMapWrite(name, from, to)
		ev.New = ev.Old.DeepCopy()
		ev.New.SetAnnotations(map[string]string{"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": "day"})
		c.Manager = &record.Manager{Name: "helm"}
		return ev, c
	}
	book.Observe("", "secrets", helmRevision(1, 10))
	other := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "token", "namespace": "day", "resourceVersion": "15"}}}
	book.Observe("", "secrets", other) // the Secrets' watch is past a's write
	one(helmWrite("a", 11, 12))
	one(configMapWrite("plain", 12, 13))
	one(helmWrite("b", 20, 21)) // revision 2's Secret (20) not delivered yet
	if got, want := out.String(), "[a@12 rev 1 plain@13 rev 0]"; got != want {
		t.Fatalf("before revision 2's Secret came: %s, want %s", got, want)
	}
	book.Observe("", "secrets", helmRevision(2, 20))
	s.releaseDue(false)
	if got := out.String(); strings.Contains(got, "b@") {
		t.Fatalf("b went on before the Secrets' watch reached its write: %s", got)
	}
	book.Observe("", "secrets", helmRevision(1, 22)) // revision 1 superseded, after b's write
	s.releaseDue(false)
	if got, want := out.String(), "[a@12 rev 1 plain@13 rev 0 b@21 rev 2]"; got != want {
		t.Fatalf("once the Secrets' watch passed b's write: %s, want %s", got, want)
	}
	one(helmWrite("c", 30, 31))
	scaled, c := helmWrite("d", 31, 32)
	c.Manager = &record.Manager{Name: "kube-controller-manager"}
	one(scaled, c) // not Helm's write: no state of the release is coming
	if got, want := out.String(), "[a@12 rev 1 plain@13 rev 0 b@21 rev 2 d@32 rev 2]"; got != want {
		t.Fatalf("before c's wait ended: %s, want %s", got, want)
	}
	now = now.Add(5 * time.Second)
	s.releaseDue(false)
	if got, want := out.String(), "[a@12 rev 1 plain@13 rev 0 b@21 rev 2 d@32 rev 2 c@31 rev 2]"; got != want {
		t.Fatalf("after the wait: %s, want %s", got, want)
	}
}
