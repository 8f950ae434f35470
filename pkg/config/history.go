package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kubediff/kubediff/pkg/moment"
)

// Bounds returns the history's retention and size bound; either zero
// means history is off.
func (h HistoryConfig) Bounds() (retention time.Duration, maxBytes int64, err error) {
	if retention, err = ParseAge(h.Retention); err != nil {
		return 0, 0, fmt.Errorf("history.retention (--history-retention): %w", err)
	}
	if strings.TrimSpace(h.MaxBytes) == "0" {
		return retention, 0, nil
	}
	if maxBytes, err = ParseBytes(h.MaxBytes); err != nil {
		return 0, 0, fmt.Errorf("history.maxBytes (--history-max-bytes): %w", err)
	}
	return retention, maxBytes, nil
}

// ParseAge reads a length of time (90m, 36h, 7d; moment.ParseAge).
func ParseAge(s string) (time.Duration, error) { return moment.ParseAge(s) }

// Which Events the record stream carries (Config.Events).
const (
	EventsNone     = "none"
	EventsWarnings = "warnings"
	EventsAll      = "all"
)

// EventRetention is how long the history keeps an Event after it last
// happened (0: as long as records).
func (h HistoryConfig) EventRetention() (time.Duration, error) {
	if strings.TrimSpace(h.Events.Retention) == "" {
		return 0, nil
	}
	d, err := ParseAge(h.Events.Retention)
	if err != nil {
		return 0, fmt.Errorf("history.events.retention (--history-events-retention): %w", err)
	}
	return d, nil
}

// CheckStore checks history.store: a DSN PostgreSQL's driver reads, with
// no password in it (a command line and a config file are read by
// others: the password comes from history.storePasswordFile or libpq's
// environment).
func (c Config) CheckStore() error {
	h := c.History
	if h.Store == "" {
		if h.StorePasswordFile != "" {
			return errors.New("history.storePasswordFile (--history-store-password-file) is set without history.store (--history-store)")
		}
		return nil
	}
	if retention, maxBytes, err := h.Bounds(); err == nil && (retention == 0 || maxBytes == 0) {
		return errors.New("history.store (--history-store) is set with the history off (history.retention or history.maxBytes is 0): the database is written from the history, so nothing would reach it")
	}
	return CheckDSN(h.Store)
}

// CheckDSN checks a PostgreSQL DSN given on a command line or in a
// config file: one the driver reads, without a password.
func CheckDSN(dsn string) error {
	if _, err := pgconn.ParseConfig(dsn); err != nil {
		// The driver's message quotes the DSN, which may hold a password.
		return errors.New("history.store (--history-store): not a PostgreSQL DSN the driver reads (postgres://USER@HOST:PORT/DB?sslmode=verify-full, or libpq's host=... dbname=... form)")
	}
	if hasPassword(dsn) {
		return errors.New("history.store (--history-store): the DSN holds a password, which a command line or config file shows to others: put it in a file (--history-store-password-file), a Secret mounted as one, or PGPASSWORD")
	}
	return nil
}

// hasPassword says whether a DSN (URL or key=value) carries a password.
func hasPassword(dsn string) bool {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		_, set := u.User.Password()
		return set || u.Query().Get("password") != ""
	}
	return strings.Contains(dsn, "password=")
}
