package watcher

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
)

// A flush that comes while the pipeline handles a change (the state
// store writes once a second, whatever the watches do) writes neither its
// record nor its state: a crash then finds the old state and no record,
// and the restart reports the change once. The watcher hands both over
// together after the handler returns, and the next flush writes both.
func TestAFlushWhileThePipelineRunsWritesNoRecordAlone(t *testing.T) {
	st, err := state.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetHistory(history.Policy{Retention: time.Hour, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	const target = "/v1, Resource=configmaps|||"
	disk := func() string {
		t.Helper()
		if err := st.Flush(); err != nil {
			t.Fatal(err)
		}
		page, err := st.History().Records(history.Query{})
		if err != nil {
			t.Fatal(err)
		}
		rv := "gone"
		if _, err := st.Each(target, func(key string, o *journal.Object) {
			if key == "ns/a" {
				rv = o.ResourceVersion
			}
		}); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d records, a at %s", len(page.Records), rv)
	}
	w, _ := testWatcher()
	var during []string
	w.handler = func(ev Event) { // the keep stage's part, and a flush cutting in
		obj := ev.Object()
		c := record.Change{Type: string(ev.Type), APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps",
			Namespace: obj.GetNamespace(), Name: obj.GetName(), ResourceVersion: obj.GetResourceVersion(), Time: record.Timestamp(time.Now())}
		ev.Note.Keep(journal.Entry{Change: c, Resource: configMaps, Old: ev.Old, New: ev.New})
		during = append(during, disk())
	}
	s := &store{toCache: cacheForm(w.cacheTransform(configMaps)), emit: w.emitter(configMaps), objects: map[string]*compactObject{},
		persist: &persisted{journal: st, target: target, logErr: func(err error) { t.Error(err) }}}
	if err := s.Replace([]any{cm("a", "1", "one")}, "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(fromWatch(t, s, cm("a", "2", "two"), true)); err != nil {
		t.Fatal(err)
	}
	after := disk()
	if err := s.Delete(fromWatch(t, s, cm("a", "3", "two"), false)); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(during, " then ", after, ", ", disk())
	if want := "[0 records, a at 1 1 records, a at 2] then 1 records, a at 2, 2 records, a at gone"; got != want {
		t.Errorf("on disk during and after each change:\n%s\nwant\n%s", got, want)
	}
}
