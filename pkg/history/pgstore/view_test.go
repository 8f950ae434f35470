package pgstore_test

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historytest"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
	"github.com/kubediff/kubediff/pkg/record"
)

// The view kubediff_changes has a row per record and event, with the
// columns docs/fleet.md names; a database of the first schema is brought
// to it.
func TestChangesView(t *testing.T) {
	store, pg := openStore(t)
	h, _ := harness(t, store, "c1")
	story(h, t)
	e := historytest.Entry("shop", "web", "1", "2", 3, "bob")
	e.Change.Rules, e.Change.Severity = []string{"image-changed"}, "warning"
	e.Change.Release = &record.Release{Tool: "helm", Namespace: "shop", Name: "web"}
	h.Write(t, historytest.T0.Add(3*time.Minute), e)
	conn, err := pgx.Connect(bg, pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	rows, err := conn.Query(bg, `SELECT cluster, namespace, kind, name, type, coalesce("user", ''), coalesce(release, ''),
		array_to_string(rules, ','), coalesce(severity, ''), coalesce(reason, '') FROM kubediff_changes WHERE cluster_id = 'c1' ORDER BY time`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var f [10]string
		err := r.Scan(&f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9])
		return strings.Join(f[:], "|"), err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"test|default|ConfigMap|a|added|||||",
		"test|shop|ReplicaSet|web-1|event|||||FailedCreate",
		"test|default|ConfigMap|a|updated|alice||||",
		"test|shop|ConfigMap|web|updated|bob|shop/web|image-changed|warning|",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kubediff_changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every query of the dashboard shipped beside the chart runs against the
// view, with Grafana's macros as Grafana expands them.
func TestDashboardQueriesRun(t *testing.T) {
	store, pg := openStore(t)
	h, _ := harness(t, store, "c1")
	story(h, t)
	raw, err := os.ReadFile("../../../charts/kubediff/dashboards/kubediff-history.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct{ Query string } `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RawSQL string `json:"rawSql"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(bg, pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	from, to := historytest.T0.Add(-time.Hour).Format(time.RFC3339), historytest.T0.Add(time.Hour).Format(time.RFC3339)
	expand := strings.NewReplacer("$__timeGroupAlias(time, $__interval)", "date_trunc('minute', time) AS time",
		"$__timeFilter(time)", "time BETWEEN '"+from+"' AND '"+to+"'", "${cluster:sqlstring}", "'%'")
	n := 0
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			sql := expand.Replace(target.RawSQL)
			if regexp.MustCompile(`\$\w`).MatchString(sql) {
				t.Errorf("%s: a macro the test does not expand: %s", p.Title, sql)
				continue
			}
			rows, err := conn.Query(bg, sql)
			if err == nil {
				for rows.Next() {
					n++
				}
				err = rows.Err()
			}
			if err != nil {
				t.Errorf("%s: %v\n%s", p.Title, err, sql)
			}
		}
	}
	if n == 0 {
		t.Error("no panel's query found a row")
	}
	if _, err := conn.Exec(bg, d.Templating.List[1].Query); err != nil {
		t.Errorf("the cluster variable's query: %v", err)
	}
}

// A database at the first schema version is brought to the current one.
func TestSchemaUpgrade(t *testing.T) {
	_, pg := openStore(t)
	conn, err := pgx.Connect(bg, pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	if _, err := conn.Exec(bg, `DROP VIEW kubediff_changes; DROP INDEX kubediff_entries_fleet; UPDATE kubediff_schema SET version = 1`); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.Open(bg, pg.DSN, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var version int
	if err := conn.QueryRow(bg, `SELECT version FROM kubediff_schema`).Scan(&version); err != nil || version != pgstore.SchemaVersion {
		t.Errorf("version %d after the upgrade (%v), want %d", version, err, pgstore.SchemaVersion)
	}
	if _, err := conn.Exec(bg, `SELECT count(*) FROM kubediff_changes`); err != nil {
		t.Errorf("the view after the upgrade: %v", err)
	}
}

// A fleet's records list together in time order, each once, page by
// page; a question about one object asks for a cluster.
func TestFleetRecordsInTimeOrder(t *testing.T) {
	store, _ := openStore(t)
	for i, cluster := range []string{"c1", "c2"} {
		h, _ := harness(t, store, cluster)
		h.Write(t, historytest.T0)
		for m := range 5 {
			at := float64(2*m + i) // c1 at 0, 2, 4…; c2 at 1, 3, 5…
			h.Write(t, historytest.T0.Add(time.Duration(at)*time.Minute), historytest.Entry("default", cluster, "x", "y", at, ""))
		}
	}
	fleet, err := store.Fleet(bg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	q := history.Query{Limit: 3}
	for range 10 {
		page, err := fleet.Records(q)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Records {
			var c record.Change
			_ = json.Unmarshal(raw, &c)
			names = append(names, c.Name)
		}
		if q.After = page.Next; q.After == "" {
			break
		}
	}
	if got := strings.Join(names, " "); got != "c1 c2 c1 c2 c1 c2 c1 c2 c1 c2" {
		t.Errorf("the fleet's records by pages of 3: %s", got)
	}
	if _, err := fleet.At(change.NewObjectID("", "configmaps", "default", "c1"), historytest.T0); !errors.Is(err, pgstore.ErrFleet) {
		t.Errorf("an object asked of the fleet: %v", err)
	}
}
