package testpg

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The tests' PostgreSQL is Debian's 15, answers on its own port on
// 127.0.0.1 through pgx, and runs as an unprivileged user, whatever the
// test runs as; it is gone when the test ends.
func TestPostgresForTests(t *testing.T) {
	var pid int
	t.Run("start", func(t *testing.T) {
		pg := StartPostgres(t)
		pid = pg.Pid
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pg.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var version string
		if err := conn.QueryRow(ctx, "select version()").Scan(&version); err != nil || !strings.HasPrefix(version, "PostgreSQL 15") {
			t.Fatalf("version %q, %v; want PostgreSQL 15", version, err)
		}
		status, err := os.ReadFile("/proc/" + strconv.Itoa(pg.Pid) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if uid, ok := strings.CutPrefix(line, "Uid:"); ok && strings.Fields(uid)[0] == "0" {
				t.Errorf("the server runs as root")
			}
		}
	})
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		if status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); !strings.Contains(string(status), "State:\tZ") {
			t.Errorf("the server (pid %d) still runs after its test", pid)
		}
	}
}
