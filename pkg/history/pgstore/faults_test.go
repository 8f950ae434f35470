package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubediff/kubediff/internal/testpg"
	"github.com/kubediff/kubediff/internal/testsync"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historytest"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

var bg = context.Background()

func story(h historytest.Harness, t *testing.T) {
	h.Write(t, historytest.T0)
	h.Write(t, historytest.T0.Add(time.Minute), historytest.Entry("default", "a", "", "1", 1, ""), historytest.Entry("default", "a", "1", "2", 2, "alice"),
		historytest.Event("e", "FailedCreate", 1, 30), historytest.Event("e", "FailedCreate", 2, 90))
}

func stats(t *testing.T, r *pgstore.Reader) history.Stats {
	t.Helper()
	s, err := r.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A batch written again (kubediff killed after the database committed it
// and before the state dir dropped it) is kept once.
func TestRowsWrittenTwiceAreKeptOnce(t *testing.T) {
	store, _ := openStore(t)
	spool := newSpool(t)
	w := pgstore.Writer{Cluster: "c1", Instance: "i1"}
	write(t, spool, historytest.T0)
	write(t, spool, historytest.T0.Add(time.Minute), historytest.Entry("default", "a", "", "1", 1, ""), historytest.Entry("default", "a", "1", "2", 2, ""),
		historytest.Event("e", "FailedCreate", 1, 30), historytest.Event("e", "FailedCreate", 2, 90))
	rows, _, err := spool.TakeOutbox(1000)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := store.Write(bg, w, rows); err != nil {
			t.Fatal(err)
		}
	}
	if s := stats(t, store.Cluster("c1")); s.Records != 2 || s.Events != 1 {
		t.Errorf("written twice: %d records, %d events; want 2 and 1 (the event folded)", s.Records, s.Events)
	}
}

// Two replicas of one cluster saw the same changes, each at its own
// moment, and both write them: each record is kept once.
func TestTwoWritersOfOneClusterKeepEachRecordOnce(t *testing.T) {
	store, _ := openStore(t)
	var wg sync.WaitGroup
	for i, skew := range []time.Duration{0, 1500 * time.Millisecond} {
		spool := newSpool(t)
		write(t, spool, historytest.T0)
		var entries []journal.Entry
		for n := range 50 {
			e := historytest.Entry("default", "a", "x", "y", float64(n+1), "")
			e.Change.Time = record.Timestamp(time.Time(e.Change.Time).Add(skew))
			entries = append(entries, e)
		}
		write(t, spool, historytest.T0, entries...)
		shipper := &pgstore.Shipper{Store: store, Spool: spool, Writer: pgstore.Writer{Cluster: "c1", Instance: []string{"a", "b"}[i]}}
		wg.Go(func() {
			if _, err := shipper.ShipAll(bg); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if s := stats(t, store.Cluster("c1")); s.Records != 50 {
		t.Errorf("two writers of the same 50 records kept %d", s.Records)
	}
}

// While the database is down the rows wait in the spool; the shipper
// says so once, not once per retry, and once when it writes again; then
// everything is there, in order.
func TestRowsWaitWhileTheDatabaseIsDown(t *testing.T) {
	store, pg := openStore(t)
	spool := newSpool(t)
	var logs testsync.Buffer
	shipper := &pgstore.Shipper{Store: store, Spool: spool, Writer: pgstore.Writer{Cluster: "c1", Instance: "i1"},
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Every: 20 * time.Millisecond}
	runShipper(t, shipper)
	write(t, spool, historytest.T0, historytest.Entry("default", "a", "", "1", 1, ""))
	waitFor(t, "the first record in the database", func() bool { return stats(t, store.Cluster("c1")).Records == 1 })

	pg.Stop()
	for n := 2; n <= 30; n++ {
		write(t, spool, historytest.T0, historytest.Entry("default", "a", "1", "2", float64(n), ""))
	}
	waitFor(t, "the outage logged", func() bool { return strings.Contains(logs.String(), "cannot write") })
	if spool.waiting() == 0 {
		t.Fatal("nothing waits in the spool while the database is down")
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the waiting records in the database", func() bool {
		s, err := store.Cluster("c1").Stats()
		return err == nil && s.Records == 30
	})
	waitFor(t, "the heal logged", func() bool { return strings.Contains(logs.String(), "writing again") })
	if n := strings.Count(logs.String(), "\n"); n != 2 {
		t.Errorf("%d log lines for one outage, want 2:\n%s", n, logs.String())
	}
	page, err := store.Cluster("c1").Records(history.Query{})
	if err != nil || len(page.Records) != 30 || !bytes.Contains(page.Records[29], []byte(`"resourceVersion":"30000"`)) {
		t.Errorf("records after the outage: %d, %v", len(page.Records), err)
	}
}

// A database set up by a newer kubediff is refused, saying so; two
// kubediffs starting at once on a new database both start.
func TestSchemaVersions(t *testing.T) {
	pg := testpg.StartPostgres(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			s, err := pgstore.Open(bg, pg.DSN, pgstore.Options{})
			if err != nil {
				t.Errorf("a start beside three others: %v", err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	conn, err := pgx.Connect(bg, pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	if _, err := conn.Exec(bg, `UPDATE kubediff_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	_, err = pgstore.Open(bg, pg.DSN, pgstore.Options{})
	if !errors.Is(err, pgstore.ErrNewerSchema) || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("a schema from a newer kubediff: %v", err)
	}
}

// A state dir's history imported twice is kept once, and answers as the
// state dir does.
func TestImportTwiceKeepsOnce(t *testing.T) {
	store, _ := openStore(t)
	spool := newSpool(t)
	h := historytest.Harness{Write: func(t *testing.T, now time.Time, entries ...journal.Entry) { write(t, spool, now, entries...) }}
	story(h, t)
	w := pgstore.Writer{Cluster: "c1", Name: "prod", Instance: "i1"}
	for range 2 {
		if _, err := store.Import(bg, w, spool.reader(), spool.EachStored); err != nil {
			t.Fatal(err)
		}
	}
	if s := stats(t, store.Cluster("c1")); s.Records != 2 || s.Events != 1 {
		t.Errorf("imported twice: %d records, %d events; want 2 and 1", s.Records, s.Events)
	}
	want, _ := spool.reader().Records(history.Query{})
	got, _ := store.Cluster("c1").Records(history.Query{})
	if len(got.Records) != len(want.Records) {
		t.Fatalf("the database lists %d records and events, the state dir %d", len(got.Records), len(want.Records))
	}
	for i := range want.Records {
		if !bytes.Equal(got.Records[i], want.Records[i]) {
			t.Errorf("record %d differs:\n%s\n%s", i, got.Records[i], want.Records[i])
		}
	}
	clusters, _ := store.Clusters(bg)
	if len(clusters) != 1 || clusters[0].Name != "prod" || !clusters[0].Begin.Equal(historytest.T0) {
		t.Errorf("clusters: %+v", clusters)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testsync.Eventually(t, what, 2*time.Minute, cond)
}

// A database that turns read-only (a failover's standby, a full disk's
// emergency mode) refuses the writes: the rows wait, one line says so,
// and once it takes writes again everything is written.
func TestRowsWaitWhileTheDatabaseIsReadOnly(t *testing.T) {
	store, pg := openStore(t)
	admin, err := pgx.Connect(bg, pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(bg)
	setReadOnly := func(on bool) {
		t.Helper()
		if _, err := admin.Exec(bg, `ALTER SYSTEM SET default_transaction_read_only = `+map[bool]string{true: "on", false: "off"}[on]); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Exec(bg, `SELECT pg_reload_conf()`); err != nil {
			t.Fatal(err)
		}
	}
	spool := newSpool(t)
	var logs testsync.Buffer
	shipper := &pgstore.Shipper{Store: store, Spool: spool, Writer: pgstore.Writer{Cluster: "c1", Instance: "i1"},
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Every: 20 * time.Millisecond}
	setReadOnly(true)
	runShipper(t, shipper)
	for n := 1; n <= 10; n++ {
		write(t, spool, historytest.T0, historytest.Entry("default", "a", "1", "2", float64(n), ""))
	}
	waitFor(t, "the refusal logged", func() bool { return strings.Contains(logs.String(), "read-only transaction") })
	if spool.waiting() == 0 {
		t.Fatal("nothing waits while the database is read-only")
	}
	setReadOnly(false)
	waitFor(t, "the waiting records written", func() bool {
		s, err := store.Cluster("c1").Stats()
		return err == nil && s.Records == 10
	})
	waitFor(t, "the heal logged", func() bool { return strings.Contains(logs.String(), "writing again") })
	if n := strings.Count(logs.String(), "\n"); n != 2 {
		t.Errorf("%d log lines, want 2:\n%s", n, logs.String())
	}
}

// A wrong password (a rotated Secret): the rows wait, one line says why
// without the password, and once the file holds the right one they are
// written.
func TestRowsWaitWhileThePasswordIsWrong(t *testing.T) {
	pg := testpg.StartPostgresWithPassword(t, "right-horse-battery")
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte("wrong-staple-guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	connect := func(ctx context.Context) (*pgstore.Store, error) {
		pw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		return pgstore.Open(ctx, pg.DSN, pgstore.Options{Password: strings.TrimSpace(string(pw))})
	}
	spool := newSpool(t)
	var logs testsync.Buffer
	shipper := &pgstore.Shipper{Connect: connect, Spool: spool, Writer: pgstore.Writer{Cluster: "c1", Instance: "i1"},
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Every: 20 * time.Millisecond}
	runShipper(t, shipper)
	write(t, spool, historytest.T0, historytest.Entry("default", "a", "", "1", 1, ""))
	waitFor(t, "the refusal logged", func() bool { return strings.Contains(logs.String(), "password authentication failed") })
	if strings.Contains(logs.String(), "wrong-staple-guess") || strings.Contains(logs.String(), "right-horse") {
		t.Errorf("a password in the log:\n%s", logs.String())
	}
	if err := os.WriteFile(file, []byte("right-horse-battery\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the heal logged", func() bool { return strings.Contains(logs.String(), "writing again") })
	s, err := shipper.Store.Cluster("c1").Stats()
	if err != nil || s.Records != 1 {
		t.Errorf("after the right password: %+v, %v", s, err)
	}
	if n := strings.Count(logs.String(), "\n"); n != 2 {
		t.Errorf("%d log lines, want 2:\n%s", n, logs.String())
	}
}

// runShipper runs the shipper until the test ends.
func runShipper(t *testing.T, shipper *pgstore.Shipper) {
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() { shipper.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// A full disk under the database: the writes fail (disk_full), the rows
// wait, one line says so; once there is room again everything waiting
// is written, in order. kubediff's tables live in a tablespace on a
// small tmpfs the test mounts (it needs root, as CI runs; PostgreSQL
// itself runs as nobody) and then grows; the write-ahead log stays on a
// disk with room, as a server's would when its data volume fills.
func TestRowsWaitWhileTheDatabaseDiskIsFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs for the database's full disk needs root")
	}
	pg := testpg.StartPostgres(t)
	small := smallTablespace(t, pg.DSN)
	store, err := pgstore.Open(bg, pg.DSN, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	fillDisk(t, pg.DSN)
	spool := newSpool(t)
	var logs testsync.Buffer
	shipper := &pgstore.Shipper{Store: store, Spool: spool, Writer: pgstore.Writer{Cluster: "c1", Instance: "i1"},
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Every: 20 * time.Millisecond}
	runShipper(t, shipper)
	for n := 1; n <= 200; n++ {
		write(t, spool, historytest.T0, historytest.Entry("default", "a", "1", "2", float64(n), ""))
	}
	waitFor(t, "the full disk logged", func() bool { return strings.Contains(logs.String(), "No space left on device") })
	if spool.waiting() == 0 {
		t.Fatal("nothing waits while the database's disk is full")
	}
	if out, err := exec.Command("mount", "-o", "remount,size=256m", small).CombinedOutput(); err != nil {
		t.Fatalf("grow the tmpfs: %v: %s", err, out)
	}
	waitFor(t, "the waiting records written", func() bool {
		s, err := store.Cluster("c1").Stats()
		return err == nil && s.Records == 200
	})
	waitFor(t, "the heal logged", func() bool { return strings.Contains(logs.String(), "writing again") })
	if n := strings.Count(logs.String(), "\n"); n != 2 {
		t.Errorf("%d log lines, want 2:\n%s", n, logs.String())
	}
}

// smallTablespace mounts a 24 MB tmpfs, makes it the database's default
// tablespace, and returns where it is mounted.
func smallTablespace(t *testing.T, dsn string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kubediff-full-disk-") // not t.TempDir(): nobody must reach it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	nobody, err := user.Lookup("nobody") // PostgreSQL's user under root (testpg)
	if err != nil {
		t.Fatal(err)
	}
	opts := "size=24m,mode=0700,uid=" + nobody.Uid + ",gid=" + nobody.Gid
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	conn, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	for _, sql := range []string{`CREATE TABLESPACE small LOCATION '` + dir + `'`, `ALTER DATABASE postgres SET default_tablespace = small`} {
		if _, err := conn.Exec(bg, sql); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fillDisk fills the database's disk with a table of its own until
// PostgreSQL says it is full.
func fillDisk(t *testing.T, dsn string) {
	t.Helper()
	conn, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	if _, err := conn.Exec(bg, `CREATE TABLE filler (b text) TABLESPACE small; ALTER TABLE filler ALTER COLUMN b SET STORAGE PLAIN`); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		_, err := conn.Exec(bg, `INSERT INTO filler SELECT repeat(md5(g::text), 60) FROM generate_series(1, 2000) AS g`)
		if err != nil {
			if !strings.Contains(err.Error(), "No space left on device") && !strings.Contains(err.Error(), "53100") {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
		if i > 10000 {
			t.Fatal("the disk never filled")
		}
	}
}
