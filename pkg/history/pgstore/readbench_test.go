package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubediff/kubediff/internal/testpg"
	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historytest"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
)

// BenchmarkReadsAtScale times the reads a person and the page make, in a
// database of KUBEDIFF_BENCH_ROWS records (default 1,000,000; the issue's
// figure is 10,000,000) of 100 clusters of 1,000 ConfigMaps each, spread
// over 7 days, each record with its state (800 bytes of JSON, packed).
// The rows are made by SQL, not shipped: this measures reads. Figures,
// over 200 random asks each:
//
//	object-history-p99-ms   one object's records (history cm/NAME -n NS)
//	get-at-p99-ms           an object at a random moment (get --at)
//	page-first-ms           the page's first screen: one cluster's last hour, 500 records
//	fleet-1h-ms             every cluster's last hour, all pages (history --since 1h)
func BenchmarkReadsAtScale(b *testing.B) {
	rows := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("KUBEDIFF_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	pg := testpg.StartPostgres(b)
	store, err := pgstore.Open(context.Background(), pg.DSN, pgstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	fill(b, store, pg.DSN, rows, now)
	b.ResetTimer()
	var f readFigures
	for b.Loop() {
		f = timeReads(b, store, rows, now)
	}
	b.ReportMetric(f.objectP99, "object-history-p99-ms")
	b.ReportMetric(f.atP99, "get-at-p99-ms")
	b.ReportMetric(f.page, "page-first-ms")
	b.ReportMetric(f.fleet, "fleet-1h-ms")
	b.ReportMetric(float64(f.fleetRecords), "fleet-1h-records")
}

const (
	benchClusters = 100
	benchObjects  = 1000 // per cluster
	benchDays     = 7
)

// fill makes the rows: partitions through the store's own writes, then
// one INSERT … SELECT per cluster.
func fill(b *testing.B, store *pgstore.Store, dsn string, rows int, now time.Time) {
	state := historytest.ConfigMap("ns-0", "cm-0", fmt.Sprintf("%0800d", 0))
	raw, _ := state.MarshalJSON()
	packed := history.PackState(raw)
	for c := range benchClusters {
		w := pgstore.Writer{Cluster: fmt.Sprintf("cluster-%03d", c), Name: fmt.Sprintf("cluster-%03d", c), Instance: "bench"}
		head := []history.Row{{Kind: history.RowBegin, Key: history.Key(now.AddDate(0, 0, -benchDays), 0)}}
		for d := 0; d <= benchDays; d++ { // a row a day makes the day's partition
			at := now.AddDate(0, 0, -d)
			head = append(head, history.Row{Kind: history.RowRecord, Key: history.Key(at, 1), ID: fmt.Sprintf("seed-%d", d),
				Object: change.NewObjectID("", "configmaps", "seed", "seed"), Line: []byte(`{}`), After: packed})
		}
		if err := store.Write(context.Background(), w, head); err != nil {
			b.Fatal(err)
		}
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	perCluster := rows / benchClusters
	span := time.Duration(benchDays) * 24 * time.Hour
	for c := range benchClusters {
		_, err := conn.Exec(context.Background(), `INSERT INTO kubediff_entries (cluster, at, id, kind, object, namespace, line, after)
			SELECT $1, $2::timestamptz - (($3::bigint - n) * $4::bigint) * interval '1 microsecond', $1 || '/' || n, 'r',
				'/configmaps/ns-' || (n % 10) || '/cm-' || (n % $5), 'ns-' || (n % 10),
				convert_to(format('{"id":"%s/%s","time":"t","type":"updated","apiVersion":"v1","kind":"ConfigMap","resource":"configmaps","namespace":"ns-%s","name":"cm-%s","uid":"u-%s","resourceVersion":"%s","changes":[{"op":"replace","path":"/data/level","field":"data.level","from":"a","to":"b"}],"manager":{"name":"kubectl-edit","operation":"Update"},"user":{"name":"alice"},"cluster":{"name":"%s"}}',
					$1, n, n % 10, n % $5, n % $5, n, $1), 'UTF8'),
				$6
			FROM generate_series(1, $3::bigint) AS n`,
			fmt.Sprintf("cluster-%03d", c), now, perCluster, int64(span/time.Microsecond)/int64(perCluster), benchObjects, packed)
		if err != nil {
			b.Fatal(err)
		}
	}
	if _, err := conn.Exec(context.Background(), `ANALYZE kubediff_entries`); err != nil {
		b.Fatal(err)
	}
}

// readFigures are one round of reads.
type readFigures struct {
	objectP99, atP99, page, fleet float64
	fleetRecords                  int
}

func timeReads(b *testing.B, store *pgstore.Store, rows int, now time.Time) readFigures {
	var f readFigures
	var object, at []float64
	for range 200 {
		c, o := rand.N(benchClusters), rand.N(benchObjects)
		r := store.Cluster(fmt.Sprintf("cluster-%03d", c))
		ns, name := "ns-"+strconv.Itoa(o%10), "cm-"+strconv.Itoa(o)
		start := time.Now()
		if _, err := r.Records(history.Query{Namespace: ns, Select: []history.Selector{{Resource: "configmaps", Name: name}}}); err != nil {
			b.Fatal(err)
		}
		object = append(object, ms(time.Since(start)))
		start = time.Now()
		if _, err := r.At(change.NewObjectID("", "configmaps", ns, name), now.Add(-time.Duration(rand.N(benchDays*24))*time.Hour)); err != nil && err != history.ErrNotFound {
			b.Fatal(err)
		}
		at = append(at, ms(time.Since(start)))
	}
	f.objectP99, f.atP99 = p99(object), p99(at)
	start := time.Now()
	if _, err := store.Cluster("cluster-042").Records(history.Query{From: now.Add(-time.Hour), Limit: 500}); err != nil {
		b.Fatal(err)
	}
	f.page = ms(time.Since(start))
	fleet, err := store.Fleet(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	q := history.Query{From: now.Add(-time.Hour)}
	for {
		page, err := fleet.Records(q)
		if err != nil {
			b.Fatal(err)
		}
		f.fleetRecords += len(page.Records)
		if q.After = page.Next; q.After == "" {
			break
		}
	}
	f.fleet = ms(time.Since(start))
	return f
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func p99(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)*99/100]
}
