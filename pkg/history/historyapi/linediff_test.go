package historyapi

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/blame"
	"github.com/kubediff/kubediff/pkg/history/restore"
)

// fakeSource holds one object's states: a ConfigMap whose value v is the
// text at each moment.
type fakeSource struct{ states map[time.Time]string }

func (f fakeSource) Records(context.Context, history.Query) (history.Page, error) {
	return history.Page{}, nil
}

func (f fakeSource) At(_ context.Context, _ change.ObjectID, t time.Time) ([]byte, error) {
	text, ok := f.states[t]
	if !ok {
		return nil, history.ErrNotFound
	}
	return json.Marshal(map[string]any{"data": map[string]any{"v": text}})
}

func (f fakeSource) Resolve(context.Context, string) ([]discovery.Resource, error) { return nil, nil }

// lcs is the length of the longest common subsequence, the slow way.
func lcs(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// The line diff keeps a longest common subsequence: its matches are
// equal lines, in order, as many as the slow way finds.
func TestLineDiffIsMinimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() []string {
		out := make([]string, rng.IntN(30))
		for i := range out {
			out[i] = string(rune('a' + rng.IntN(4)))
		}
		return out
	}
	for range 3000 {
		a, b := random(), random()
		match, err := diffLines(context.Background(), a, b)
		if err != nil {
			t.Fatal(err)
		}
		kept, last := 0, -1
		for i, j := range match {
			if j == -1 {
				continue
			}
			if j <= last || a[i] != b[j] {
				t.Fatalf("%q → %q: bad match %v", a, b, match)
			}
			last = j
			kept++
		}
		if want := lcs(a, b); kept != want {
			t.Fatalf("%q → %q: %d lines kept, want %d", a, b, kept, want)
		}
	}
}

// The diff reads as diff -u prints it.
func TestUnifiedFormat(t *testing.T) {
	a := strings.SplitAfter("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n", "\n")
	a = a[:len(a)-1]
	b := append([]string{"0\n"}, a...)
	b[4] = "four\n"
	b = append(b[:14], b[15:]...) // 14 removed
	match, err := diffLines(context.Background(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := `--- x at 1
+++ x at 2
@@ -1,7 +1,8 @@
+0
 1
 2
 3
-4
+four
 5
 6
 7
@@ -11,5 +12,4 @@
 11
 12
 13
-14
 15
`
	if got := unified(a, b, match, "x at 1", "x at 2"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	same, _ := diffLines(context.Background(), a, a)
	if got := unified(a, a, same, "x", "y"); got != "" {
		t.Errorf("no change: %q", got)
	}
}

func (fakeSource) Blame(context.Context, change.ObjectID, time.Time, bool) (blame.Blame, error) {
	return blame.Blame{}, history.ErrNotFound
}

func (fakeSource) Restore(context.Context, change.ObjectID, time.Time) (restore.Manifest, error) {
	return restore.Manifest{}, history.ErrNotFound
}
