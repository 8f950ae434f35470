package pgstore_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/internal/changegen"
	"github.com/kubediff/kubediff/internal/testpg"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historytest"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
	"github.com/kubediff/kubediff/pkg/journal"
)

// BenchmarkIngest keeps 20,000 changes (200 ConfigMaps holding a 1.7 KB
// config file, and 200 Deployments, changed in turn) in a state dir's
// history, 1,000 a transaction as the flush does under load, with the
// outbox and without it, then ships the outbox to PostgreSQL. One op is
// the whole run; the figures:
//
//	records/s            rows shipped into PostgreSQL a second (wall time)
//	ship-cpu-µs/record   this process's CPU per record shipped
//	outbox-cpu-ratio     the state dir's CPU per record with the outbox / without it
//	pg-B/record          the entries' partitions with their indexes, per record
//	dir-B/record         the state dir's file per record (without the outbox)
//	pg/dir               the two above, as a ratio
func BenchmarkIngest(b *testing.B) {
	pg := testpg.StartPostgres(b)
	store, err := pgstore.Open(context.Background(), pg.DSN, pgstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	const changes = 20000
	var f ingest
	for i := 0; b.Loop(); i++ {
		entries := generate(b, changes)
		plain, withOutbox := newSpool(b), newSpool(b)
		cpuPlain, size := keep(b, plain, entries, false)
		cpuOutbox, _ := keep(b, withOutbox, entries, true)
		shipper := &pgstore.Shipper{Store: store, Spool: withOutbox, Writer: pgstore.Writer{Cluster: "bench-" + string(rune('a'+i)), Instance: "i"}}
		start, cpu := time.Now(), cpuTime()
		n, err := shipper.ShipAll(context.Background())
		if err != nil || n < changes {
			b.Fatalf("shipped %d of %d: %v", n, changes, err)
		}
		f = ingest{wall: time.Since(start), cpu: cpuTime() - cpu, records: n, outboxRatio: float64(cpuOutbox) / float64(cpuPlain),
			pgBytes: entriesSize(b, pg.DSN), dirBytes: size}
	}
	b.ReportMetric(float64(f.records)/f.wall.Seconds(), "records/s")
	b.ReportMetric(float64(f.cpu.Microseconds())/float64(f.records), "ship-cpu-µs/record")
	b.ReportMetric(f.outboxRatio, "outbox-cpu-ratio")
	b.ReportMetric(float64(f.pgBytes)/float64(b.N*f.records), "pg-B/record")
	b.ReportMetric(float64(f.dirBytes)/float64(f.records), "dir-B/record")
	b.ReportMetric(float64(f.pgBytes)/float64(b.N)/float64(f.dirBytes), "pg/dir")
}

// ingest are one run's figures.
type ingest struct {
	wall, cpu         time.Duration
	records           int
	outboxRatio       float64
	pgBytes, dirBytes int64
}

// generate makes n changes: ConfigMaps and Deployments in turn, ten
// seconds apart per thousand.
func generate(b *testing.B, n int) []journal.Entry {
	cms, err := changegen.NewConfigMaps(200)
	if err != nil {
		b.Fatal(err)
	}
	deploys, err := changegen.NewDeployments(200)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]journal.Entry, 0, n)
	for i := range n {
		s := []*changegen.Stream{cms, deploys}[i%2]
		u, err := s.Next(historytest.T0.Add(time.Duration(i) * 10 * time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, u.Entry)
	}
	return out
}

// keep writes entries into the spool's history, 1,000 a transaction, and
// returns the CPU it took and the file's used extent.
func keep(b *testing.B, s boltSpool, entries []journal.Entry, outbox bool) (time.Duration, int64) {
	p := historytest.Keep
	p.Outbox = outbox
	cpu := cpuTime()
	for i := 0; i < len(entries); i += 1000 {
		batch := entries[i:min(i+1000, len(entries))]
		now := time.Time(batch[len(batch)-1].Change.Time)
		if err := s.db.Update(func(tx *bolt.Tx) error { return history.Write(tx, batch, p, now) }); err != nil {
			b.Fatal(err)
		}
	}
	spent := cpuTime() - cpu
	var size int64
	_ = s.db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	return spent, size
}

// cpuTime is this process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// entriesSize is what every partition of the entries takes, with its
// indexes and TOAST.
func entriesSize(b *testing.B, dsn string) int64 {
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	var size int64
	err = conn.QueryRow(context.Background(), `SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0)::bigint
		FROM pg_inherits i WHERE i.inhparent = 'kubediff_entries'::regclass`).Scan(&size)
	if err != nil {
		b.Fatal(err)
	}
	return size
}
