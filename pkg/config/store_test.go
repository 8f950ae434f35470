package config

import (
	"strings"
	"testing"
)

// history.store takes a DSN the driver reads, never one holding a
// password, never with the history off; its errors never echo the DSN.
func TestHistoryStoreChecks(t *testing.T) {
	for _, c := range []struct {
		name, dsn, passwordFile, retention string
		want                               string // "" accepted
	}{
		{"a URL", "postgres://kubediff@db.example:5432/kubediff?sslmode=verify-full", "", "7d", ""},
		{"key=value", "host=db.example user=kubediff dbname=kubediff", "/run/secrets/pw", "7d", ""},
		{"a password in the URL", "postgres://kubediff:hunter2@db.example/kubediff", "", "7d", "holds a password"},
		{"a password as a parameter", "postgres://kubediff@db.example/kubediff?password=hunter2", "", "7d", "holds a password"},
		{"a password as a key", "host=db.example user=kubediff password=hunter2", "", "7d", "holds a password"},
		{"unreadable", "postgres://kubediff:hunter2@db.example:notaport/x", "", "7d", "not a PostgreSQL DSN"},
		{"history off", "postgres://kubediff@db.example/kubediff", "", "0", "history off"},
		{"a password file alone", "", "/run/secrets/pw", "7d", "without history.store"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			cfg.History.Store, cfg.History.StorePasswordFile, cfg.History.Retention = c.dsn, c.passwordFile, c.retention
			err := cfg.CheckStore()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error saying %q", err, c.want)
			case err != nil && strings.Contains(err.Error(), "hunter2"):
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
