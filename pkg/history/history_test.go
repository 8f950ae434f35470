package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

var (
	t0           = time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	configMaps   = change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, Singular: "configmap", ShortNames: []string{"cm"}}
	unlimited    = Policy{Retention: 365 * 24 * time.Hour, MaxBytes: 1 << 40}
	settingsID   = change.NewObjectID("", "configmaps", "default", "settings")
	otherNSCMID  = change.NewObjectID("", "configmaps", "other", "settings")
	currentState = map[change.ObjectID]string{}
)

func openDB(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "h.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func configMap(ns, value string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName("settings")
	u.SetUID(types.UID("uid-" + ns))
	_ = unstructured.SetNestedField(u.Object, value, "data", "level")
	return u
}

// entryOf makes the record and entry of a ConfigMap going from old to new
// ("" for none) at t0+minute.
func entryOf(ns, old, new string, minute int) journal.Entry {
	c := record.Change{Time: record.Timestamp(t0.Add(time.Duration(minute) * time.Minute)), APIVersion: "v1", Kind: "ConfigMap",
		Resource: "configmaps", Namespace: ns, Name: "settings", UID: "uid-" + ns, ResourceVersion: fmt.Sprint(minute)}
	e := journal.Entry{Resource: configMaps}
	switch {
	case old == "":
		c.Type = record.Added
	case new == "":
		c.Type = record.Deleted
	default:
		c.Type = record.Updated
		c.Changes = []record.FieldChange{{Op: record.OpReplace, Path: "/data/level", Field: "data.level", From: old, To: new}}
	}
	if old != "" {
		e.Old = configMap(ns, old)
	}
	if new != "" {
		e.New = configMap(ns, new)
	}
	c.ID = c.StableID()
	e.Change = c
	return e
}

func write(t *testing.T, db *bolt.DB, p Policy, now time.Time, entries ...journal.Entry) {
	t.Helper()
	if err := db.Update(func(tx *bolt.Tx) error { return Write(tx, entries, p, now) }); err != nil {
		t.Fatal(err)
	}
}

func reader(db *bolt.DB) *Reader {
	return NewReader(db, func(_ *bolt.Tx, group, resource, ns, name string) []byte {
		if s, ok := currentState[change.NewObjectID(group, resource, ns, name)]; ok {
			return []byte(s)
		}
		return nil
	})
}

func levelAt(t *testing.T, r *Reader, id change.ObjectID, minute float64) (string, error) {
	t.Helper()
	raw, err := r.At(id, t0.Add(time.Duration(minute*float64(time.Minute))))
	if err != nil {
		return "", err
	}
	var u unstructured.Unstructured
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	level, _, _ := unstructured.NestedString(u.Object, "data", "level")
	return level, nil
}

// An object's state at any moment comes back: before it existed, each
// version, and after its deletion.
func TestAtEachMoment(t *testing.T) {
	db := openDB(t)
	write(t, db, unlimited, t0, entryOf("default", "", "a", 1), entryOf("default", "a", "b", 2))
	write(t, db, unlimited, t0.Add(time.Hour), entryOf("default", "b", "c", 3), entryOf("default", "c", "", 4))
	r := reader(db)
	for _, tc := range []struct {
		minute float64
		want   string
		err    error
	}{{0.5, "", ErrNotFound}, {1, "a", nil}, {1.5, "a", nil}, {2, "b", nil}, {3.2, "c", nil}, {4, "", ErrNotFound}, {-1, "", ErrBeforeHistory}} {
		got, err := levelAt(t, r, settingsID, tc.minute)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("at minute %v: %q, %v; want %q, %v", tc.minute, got, err, tc.want, tc.err)
		}
	}
}

// changesOf is the page of records r finds for q, decoded.
func changesOf(t *testing.T, r *Reader, q Query) []record.Change {
	t.Helper()
	page, err := r.Records(q)
	if err != nil {
		t.Fatal(err)
	}
	changes := make([]record.Change, 0, len(page.Records))
	for _, raw := range page.Records {
		var c record.Change
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, c)
	}
	return changes
}

// The records of a window come back oldest first, as JSON records,
// filtered by namespace, type and name, and by the caller's access; a
// page token goes on where a page stopped.
func TestRecordsFilteredAndPaged(t *testing.T) {
	db := openDB(t)
	write(t, db, unlimited, t0, entryOf("default", "", "a", 1), entryOf("other", "", "x", 2), entryOf("default", "a", "b", 3))
	r := reader(db)
	check := func(q Query, want ...string) {
		t.Helper()
		var got []string
		for _, c := range changesOf(t, r, q) {
			got = append(got, c.Namespace+"/"+c.ResourceVersion)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%+v: %v, want %v", q, got, want)
		}
	}
	check(Query{}, "default/1", "other/2", "default/3")
	check(Query{Namespace: "default"}, "default/1", "default/3")
	check(Query{From: t0.Add(2 * time.Minute)}, "other/2", "default/3")
	check(Query{Until: t0.Add(2 * time.Minute)}, "default/1", "other/2")
	check(Query{Select: []Selector{{Resource: "configmaps", Name: "settings"}}, Namespace: "other"}, "other/2")
	check(Query{Select: []Selector{{Group: "apps", Resource: "deployments"}}})
	var onlyOther Grants
	onlyOther.Grant(Scope{Resource: "configmaps", Namespace: "other"})
	check(Query{Visible: &onlyOther}, "other/2")
	check(Query{Visible: &Grants{}})

	first, err := r.Records(Query{Limit: 2})
	if err != nil || len(first.Records) != 2 || first.Next == "" {
		t.Fatalf("first page: %d records, next %q, %v", len(first.Records), first.Next, err)
	}
	check(Query{Limit: 2, After: first.Next}, "default/3")
	// One named object's records come through the objects index, paged
	// the same way.
	one := Query{Select: []Selector{{Resource: "configmaps", Name: "settings"}}, Namespace: "default", Limit: 1}
	page, err := r.Records(one)
	if err != nil || len(page.Records) != 1 || page.Next == "" {
		t.Fatalf("first page of one object: %d records, next %q, %v", len(page.Records), page.Next, err)
	}
	one.After = page.Next
	check(one, "default/3")
	if _, err := r.Records(Query{After: "zz"}); err == nil {
		t.Error("a bad page token was accepted")
	}
}

// Records made by one user come back, by the name the API server gave
// (exact, never a part of it) or for a ServiceAccount as text output
// names it; records no identity source named, or another user's, do not;
// a page is filled with that user's records.
func TestRecordsOfOneUser(t *testing.T) {
	db := openDB(t)
	alice := &record.User{Name: "alice", Groups: []string{"dev"}}
	deployer := &record.User{Name: "system:serviceaccount:ci:deployer", ServiceAccount: &record.ServiceAccount{Namespace: "ci", Name: "deployer"}}
	by := func(e journal.Entry, u *record.User) journal.Entry { e.Change.User = u; return e }
	write(t, db, unlimited, t0, by(entryOf("default", "", "a", 1), alice), by(entryOf("other", "", "x", 2), deployer),
		entryOf("default", "a", "b", 3), by(entryOf("default", "b", "c", 4), &record.User{Name: "alice2"}),
		by(entryOf("other", "x", "y", 5), alice), by(entryOf("default", "c", "d", 6), alice))
	r := reader(db)
	versions := func(q Query) string {
		t.Helper()
		var got []string
		for _, c := range changesOf(t, r, q) {
			got = append(got, c.ResourceVersion)
		}
		return fmt.Sprint(got)
	}
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{Query{User: "alice"}, "[1 5 6]"},
		{Query{User: "alice", Namespace: "default"}, "[1 6]"},
		{Query{User: "alice", Limit: 2}, "[1 5]"},
		{Query{User: "system:serviceaccount:ci:deployer"}, "[2]"},
		{Query{User: "ServiceAccount ci/deployer"}, "[2]"},
		{Query{User: "ali"}, "[]"},
		{Query{User: "deployer"}, "[]"},
	} {
		if got := versions(tc.q); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.q, got, tc.want)
		}
	}
}

// Records of the objects one release applied come back, by the
// release's name or namespace/name; records of no release, or of
// another, do not.
func TestRecordsOfOneRelease(t *testing.T) {
	db := openDB(t)
	web := &record.Release{Tool: record.ToolHelm, Namespace: "shop", Name: "web", Revision: 7, Chart: "web-1.4.2"}
	api := &record.Release{Tool: record.ToolArgoCD, Kind: "Application", Namespace: "argocd", Name: "api", GitRevision: "4f1c2a9"}
	of := func(e journal.Entry, r *record.Release) journal.Entry { e.Change.Release = r; return e }
	write(t, db, unlimited, t0, of(entryOf("default", "", "a", 1), web), of(entryOf("other", "", "x", 2), api),
		entryOf("default", "a", "b", 3), of(entryOf("default", "b", "c", 4), web))
	r := reader(db)
	for name, want := range map[string]string{"web": "[1 4]", "shop/web": "[1 4]", "argocd/api": "[2]", "api": "[2]", "other/web": "[]", "we": "[]"} {
		var got []string
		for _, c := range changesOf(t, r, Query{Release: name}) {
			got = append(got, c.ResourceVersion)
		}
		if fmt.Sprint(got) != want {
			t.Errorf("release %q: %v, want %s", name, got, want)
		}
	}
}

// A page token names the last record the caller was shown, never the
// next record kept, which may be one the caller may not see: its time
// would tell that something changed then.
func TestPageTokenNamesTheLastRecordShown(t *testing.T) {
	db := openDB(t)
	write(t, db, unlimited, t0, entryOf("default", "", "a", 1), entryOf("other", "", "x", 2), entryOf("default", "a", "b", 3))
	r := reader(db)
	var mine Grants
	mine.Grant(Scope{Resource: "configmaps", Namespace: "default"})
	q := Query{Visible: &mine, Limit: 1}
	var times []time.Time
	var shown int
	for {
		page, err := r.Records(q)
		if err != nil {
			t.Fatal(err)
		}
		shown += len(page.Records)
		if page.Next == "" {
			break
		}
		k, err := ParsePageToken(page.Next)
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, keyTime(k))
		q.After = page.Next
	}
	if shown != 2 {
		t.Errorf("%d records shown over the pages, want 2", shown)
	}
	for _, at := range times {
		if at.Equal(t0.Add(2 * time.Minute)) {
			t.Errorf("a page token tells the time of the other namespace's record (%s)", at)
		}
	}
	for _, bad := range []string{"garbage", "00", ""} {
		if _, err := ParsePageToken(bad); !errors.Is(err, ErrBadPageToken) {
			t.Errorf("page token %q: %v, want ErrBadPageToken", bad, err)
		}
	}
}

// The scopes a query must decide are the types and namespaces the
// history holds records of, narrowed by the query's namespace and types.
func TestScopesAreTheTypesAndNamespacesKept(t *testing.T) {
	db := openDB(t)
	secret := entryOf("default", "", "s", 4)
	secret.Change.Kind, secret.Change.Resource = "Secret", "secrets"
	write(t, db, unlimited, t0, entryOf("default", "", "a", 1), entryOf("other", "", "x", 2), entryOf("default", "a", "b", 3), secret)
	r := reader(db)
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{Query{}, "[{ configmaps default} { configmaps other} { secrets default}]"},
		{Query{Namespace: "other"}, "[{ configmaps other}]"},
		{Query{Namespace: "nowhere"}, "[]"},
		{Query{Select: []Selector{{Resource: "secrets"}}}, "[{ secrets default}]"},
		{Query{Select: []Selector{{Group: "apps", Resource: "deployments"}}}, "[]"},
		{Query{Select: []Selector{{Resource: "configmaps", Name: "settings"}}, Namespace: "default"}, "[{ configmaps default}]"},
	} {
		got, err := r.Scopes(tc.q)
		if err != nil || fmt.Sprint(got) != tc.want && !(len(got) == 0 && tc.want == "[]") {
			t.Errorf("%+v: %v, %v; want %s", tc.q, got, err, tc.want)
		}
	}
}

// Retention drops the oldest records, by age and by size, and an
// object's state before its oldest kept record is still known.
func TestRetentionKeepsStatesKnown(t *testing.T) {
	db := openDB(t)
	write(t, db, unlimited, t0, entryOf("default", "", "a", 1), entryOf("default", "a", "b", 2), entryOf("default", "b", "c", 30))
	// An hour's retention at t0+89m drops the records of minutes 1 and 2.
	write(t, db, Policy{Retention: time.Hour, MaxBytes: 1 << 40}, t0.Add(89*time.Minute))
	r := reader(db)
	if got, err := levelAt(t, r, settingsID, 29.5); got != "b" || err != nil {
		t.Errorf("before the oldest kept record: %q, %v; want b", got, err)
	}
	if _, err := levelAt(t, r, settingsID, 1.5); !errors.Is(err, ErrBeforeHistory) {
		t.Errorf("at a dropped moment: %v, want ErrBeforeHistory", err)
	}
	page, _ := r.Records(Query{})
	if len(page.Records) != 1 {
		t.Errorf("%d records kept, want 1", len(page.Records))
	}

	// A size bound drops records until the history fits.
	for i := range 200 {
		write(t, db, unlimited, t0.Add(90*time.Minute), entryOf("default", fmt.Sprint(i), fmt.Sprint(i+1), 31+i))
	}
	write(t, db, Policy{Retention: 24 * time.Hour, MaxBytes: 8 << 10}, t0.Add(300*time.Minute))
	var size uint64
	_ = db.View(func(tx *bolt.Tx) error {
		size = (&buckets{meta: tx.Bucket(rootBucket).Bucket(metaBucket)}).counter(bytesKey)
		return nil
	})
	page, _ = r.Records(Query{Limit: 1000})
	if size > 8<<10 || len(page.Records) == 0 || len(page.Records) > 100 {
		t.Errorf("after a size bound of 8 KiB: %d bytes counted, %d records kept", size, len(page.Records))
	}
	var oldest record.Change
	_ = json.Unmarshal(page.Records[0], &oldest)
	before := time.Time(oldest.Time).Sub(t0).Minutes() - 0.5
	if got, err := levelAt(t, r, settingsID, before); err != nil || got == "" {
		t.Errorf("state before the oldest kept record after a size trim: %q, %v", got, err)
	}
}

// An object with no kept record has its current state since the history
// began; a type resolves by any name kubectl accepts.
func TestUnchangedObjectAndTypeNames(t *testing.T) {
	db := openDB(t)
	write(t, db, unlimited, t0, entryOf("default", "", "a", 1))
	currentState[otherNSCMID] = `{"data":{"level":"steady"}}`
	t.Cleanup(func() { delete(currentState, otherNSCMID) })
	r := reader(db)
	if got, err := levelAt(t, r, otherNSCMID, 5); got != "steady" || err != nil {
		t.Errorf("unchanged object: %q, %v", got, err)
	}
	for _, name := range []string{"cm", "configmaps", "ConfigMap", "configmap"} {
		types, err := r.Resolve(name)
		if err != nil || len(types) != 1 || types[0].GVR.Resource != "configmaps" {
			t.Errorf("Resolve(%q) = %v, %v", name, types, err)
		}
	}
}

// A state kept without a record (a status change the quiet rules hide)
// is the object's state from its moment on, and no query for records
// lists it; dropped by retention, it still carries its state to the
// object's next record.
func TestStateKeptWithoutARecord(t *testing.T) {
	db := openDB(t)
	quiet := entryOf("default", "a", "a-quiet", 2)
	quiet.StateOnly = true
	write(t, db, unlimited, t0, entryOf("default", "", "a", 1), quiet, entryOf("default", "a-quiet", "b", 3))
	r := reader(db)
	for minute, want := range map[float64]string{1.5: "a", 2.5: "a-quiet", 3: "b"} {
		if got, err := levelAt(t, r, settingsID, minute); got != want || err != nil {
			t.Errorf("at minute %v: %q, %v; want %q", minute, got, err, want)
		}
	}
	page, err := r.Records(Query{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	next, err := r.Records(Query{After: page.Next})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, line := range append(page.Records, next.Records...) {
		var c record.Change
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("a record that is not one: %q", line)
		}
		types = append(types, c.Type)
	}
	if fmt.Sprint(types) != "[added updated]" {
		t.Errorf("records listed across two pages = %v, want [added updated]: the kept state is no record", types)
	}
	if stats, err := r.Stats(); err != nil || stats.Records != 2 || stats.QuietStates != 1 || stats.Bytes == 0 {
		t.Errorf("stats = %+v, %v; want 2 records, 1 quiet state and their bytes", stats, err)
	}
}
