package historyapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
)

// Queries take turns, and each turn rests three times as long as its
// work took before the next begins: however many callers ask at once,
// the history's work never overlaps and takes at most a quarter of the
// time, the rest left to the live stream. A caller whose request ends
// while it waits is told so and does no work.
func TestQueriesTakeTurnsAndRest(t *testing.T) {
	turns := newTurns(queryTurns)
	var mu sync.Mutex
	var spans [][2]time.Time
	work := func() ([]byte, error) {
		start := time.Now()
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		spans = append(spans, [2]time.Time{start, time.Now()})
		return nil, nil
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := turns.inTurn(context.Background(), work); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	sort.Slice(spans, func(i, j int) bool { return spans[i][0].Before(spans[j][0]) })
	for i := 1; i < len(spans); i++ {
		prev, next := spans[i-1], spans[i]
		worked, gap := prev[1].Sub(prev[0]), next[0].Sub(prev[1])
		if rest := time.Duration(float64(worked) * (1/queryShare - 1)); gap < rest {
			t.Errorf("query %d began %v after query %d ended, which worked %v: want a rest of at least %v", i, gap, i-1, worked, rest)
		}
	}

	if err := turns.take(context.Background()); err != nil { // the turn busy
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ran := false
	if _, err := turns.inTurn(ctx, func() ([]byte, error) { ran = true; return nil, nil }); !errors.Is(err, errNoTurn) || ran {
		t.Errorf("a request ended while waiting: err %v, work ran %v; want errNoTurn and no work", err, ran)
	}
}

// Twenty callers asking at once are all answered, each as if alone.
func TestConcurrentQueriesAreAllAnswered(t *testing.T) {
	var entries []journal.Entry
	for i := range 30 {
		entries = append(entries, entry("mine", fmt.Sprint("cm-", i%3), i, map[string]any{"k": fmt.Sprint(i)}, map[string]any{"k": fmt.Sprint(i + 1)}))
	}
	base, _, _ := apiServer(t, viewerOf("mine"), entries...)
	at, from := t0.Add(10*time.Minute).Format(time.RFC3339), t0.Format(time.RFC3339)
	asks := []string{
		RecordsPath + "?namespace=mine",
		ObjectPath + "?namespace=mine&object=configmaps/cm-1&at=" + url.QueryEscape(at),
		DiffPath + "?namespace=mine&object=configmaps/cm-1&from=" + url.QueryEscape(from),
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if code, body := get(t, base+asks[i%3], "viewer-token"); code != 200 {
				t.Errorf("%s: %d %.200s", asks[i%3], code, body)
			}
		})
	}
	wg.Wait()
}

// A records page is the JSON it was when json.Marshal wrote it, though
// its records are now copied as kept: the same records, next and begin,
// and an empty page's records an empty list.
func TestRecordsPageIsTheSameJSON(t *testing.T) {
	var entries []journal.Entry
	for i := range 3 {
		entries = append(entries, entry("mine", fmt.Sprint("cm-", i), i, nil, map[string]any{"k": "<v&>"}))
	}
	base, db, _ := apiServer(t, viewerOf("*"), entries...)
	reader := history.NewReader(db, nil)
	for _, q := range []struct {
		query string
		want  history.Query
	}{
		{"?limit=2", history.Query{Limit: 2}},
		{"?namespace=elsewhere", history.Query{Namespace: "elsewhere"}},
	} {
		code, body := get(t, base+RecordsPath+q.query, "viewer-token")
		page, err := reader.Records(q.want)
		if err != nil || code != 200 {
			t.Fatalf("%s: %d %s, %v", q.query, code, body, err)
		}
		if page.Records == nil {
			page.Records = []json.RawMessage{}
		}
		want, _ := json.Marshal(page)
		if !sameJSON(t, body, string(want)) {
			t.Errorf("%s answered\n%s\nwant\n%s", q.query, body, want)
		}
	}
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// The history as MCP's tools read it (Handler.SourceFor) takes the same
// turns as the API's queries: while a query holds the turn, an MCP read
// waits, and gives up when its request ends.
func TestMCPReadsTakeTheAPIsTurns(t *testing.T) {
	_, db, access := apiServer(t, viewerOf("mine"), entry("mine", "cm-0", 0, nil, map[string]any{"k": "v"}))
	h := NewHandler(history.NewReader(db, nil), access)
	src := h.SourceFor(&authnv1.UserInfo{Username: "viewer", UID: "u1"})
	if page, err := src.Records(context.Background(), history.Query{Namespace: "mine"}); err != nil || len(page.Records) != 1 {
		t.Fatalf("a free turn: %d records, %v; want 1", len(page.Records), err)
	}
	if err := h.turns.take(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := src.Records(ctx, history.Query{Namespace: "mine"}); !errors.Is(err, errNoTurn) {
		t.Errorf("Records while a query holds the turn: %v, want errNoTurn", err)
	}
	id := change.NewObjectID("", "configmaps", "mine", "cm-0")
	if _, err := src.At(ctx, id, t0.Add(time.Minute)); !errors.Is(err, errNoTurn) {
		t.Errorf("At while a query holds the turn: %v, want errNoTurn", err)
	}
}
