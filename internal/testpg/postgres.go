// Package testpg starts Debian's PostgreSQL 15 for a test: its own data
// directory, a free port on 127.0.0.1, an unprivileged user (make
// postgres installs it). It needs no control plane.
package testpg

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/klauspost/compress/zstd"
)

// PostgresBinDir is where Debian's postgresql-15 puts its programs
// (`make postgres` installs it); KUBEDIFF_POSTGRES_BIN names another.
func PostgresBinDir() string {
	if dir := os.Getenv("KUBEDIFF_POSTGRES_BIN"); dir != "" {
		return dir
	}
	return "/usr/lib/postgresql/15/bin"
}

// Postgres is a PostgreSQL server started for one test: its own data
// directory, a free port on 127.0.0.1, run as an unprivileged user
// (PostgreSQL refuses root, and a test should not need it).
type Postgres struct {
	// DSN connects as the superuser "kubediff" to the database "kubediff".
	DSN  string
	Port int
	// Pid is the server's process id.
	Pid    int
	cmd    *exec.Cmd
	exited chan struct{}
	bin    string
	dir    string
	cred   *syscall.Credential
}

// StartPostgres starts a PostgreSQL server in a temporary directory and
// stops it when the test ends.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	return StartPostgresWithPassword(t, "")
}

// StartPostgresWithPassword is StartPostgres whose user "kubediff" must
// give password over TCP (SCRAM), as a managed database asks; "" trusts
// every connection.
func StartPostgresWithPassword(t testing.TB, password string) *Postgres {
	t.Helper()
	dir, err := os.MkdirTemp("", "kubediff-postgres-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p, err := New(dir, password)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// New makes a database in dir (the caller's, which it removes after
// Stop) and starts its server, outside a test (the benchmark's). A
// password other than "" is asked of TCP connections (SCRAM).
func New(dir, password string) (*Postgres, error) {
	bin := PostgresBinDir()
	if _, err := os.Stat(filepath.Join(bin, "postgres")); err != nil {
		return nil, fmt.Errorf("PostgreSQL 15 is not installed in %s: run `make postgres`", bin)
	}
	cred, err := unprivileged(dir)
	if err != nil {
		return nil, err
	}
	args := []string{"-D", filepath.Join(dir, "data"), "-U", "kubediff", "--auth=trust", "-E", "UTF8", "--no-sync"}
	if password != "" {
		pwfile := filepath.Join(dir, "password")
		if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "--auth-host=scram-sha-256", "--pwfile="+pwfile)
	}
	if out, err := runAs(exec.Command(filepath.Join(bin, "initdb"), args...), cred).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	p := &Postgres{Port: FreePort(), bin: bin, dir: dir, cred: cred}
	if p.Port == 0 {
		return nil, errors.New("no free port on 127.0.0.1")
	}
	p.DSN = fmt.Sprintf("postgres://kubediff@127.0.0.1:%d/postgres?sslmode=disable", p.Port)
	if err := p.Start(); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// Start starts the server (again, after Stop: the same data, the same
// port) and waits until it answers.
func (p *Postgres) Start() error {
	data := filepath.Join(p.dir, "data")
	p.cmd = runAs(exec.Command(filepath.Join(p.bin, "postgres"), "-D", data, "-p", strconv.Itoa(p.Port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+p.dir, "-c", "fsync=off"), p.cred)
	logFile, err := os.OpenFile(filepath.Join(p.dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return err
	}
	p.Pid = p.cmd.Process.Pid
	p.exited = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	if err := p.waitReady(); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
		return fmt.Errorf("PostgreSQL did not start: %w\n%s", err, log)
	}
	return nil
}

// waitReady polls pg_isready until the server answers (a loaded machine
// may take seconds), or the server exits.
func (p *Postgres) waitReady() error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ready := exec.Command(filepath.Join(p.bin, "pg_isready"), "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port))
		if ready.Run() == nil {
			return nil
		}
		select {
		case <-p.exited:
			return errors.New("the server exited")
		default:
		}
		time.Sleep(100 * time.Millisecond) // a poll's interval, under the deadline above
	}
	return errors.New("not ready within 2 minutes")
}

// Stop stops the server quickly (SIGINT: PostgreSQL's fast shutdown,
// which ends every connection); stopped already, it does nothing.
func (p *Postgres) Stop() {
	if p.exited == nil {
		return // never started
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// unprivileged is the user the server runs as: this process's when it
// is not root, else nobody, who is given dir.
func unprivileged(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root, the server needs an unprivileged user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// runAs makes cmd run as cred (nil: as this process).
func runAs(cmd *exec.Cmd, cred *syscall.Credential) *exec.Cmd {
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Env = append(os.Environ(), "HOME="+os.TempDir())
	}
	return cmd
}

// FindInPostgres searches every kubediff table of the database for
// value, in plain text, in base64 and inside the packed states, and
// says where it is ("": nowhere).
func FindInPostgres(t testing.TB, dsn, value string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	needles := [][]byte{[]byte(value), []byte(base64.StdEncoding.EncodeToString([]byte(value)))}
	for _, q := range []string{`SELECT 'entries', id, coalesce(line, ''), coalesce(before, ''), coalesce(after, '') FROM kubediff_entries`,
		`SELECT 'baseline', object, ''::bytea, ''::bytea, state FROM kubediff_baseline`} {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var table, id string
			var line, before, after []byte
			if err := rows.Scan(&table, &id, &line, &before, &after); err != nil {
				t.Fatal(err)
			}
			for _, b := range [][]byte{line, unpacked(before), unpacked(after)} {
				for _, n := range needles {
					if bytes.Contains(b, n) {
						rows.Close()
						return table + " " + id
					}
				}
			}
		}
		rows.Close()
	}
	return ""
}

// unpacked is a packed state's JSON (as pkg/history packs it: zstd), or
// b itself when it is not packed.
func unpacked(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	d, err := zstd.NewReader(nil)
	if err != nil {
		return b
	}
	defer d.Close()
	out, err := d.DecodeAll(b, nil)
	if err != nil {
		return b
	}
	return out
}

// FreePort is a port on 127.0.0.1 nothing listens on now (0: none).
func FreePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
