package pgstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
)

// Spool is where rows wait for the database: the state dir (state.Store)
// keeps each entry's row in its outbox, in the transaction that keeps
// the entry, until the database has it.
type Spool interface {
	// TakeOutbox returns up to max rows, oldest first, and ack, which
	// drops them; rows not acked are taken again.
	TakeOutbox(max int) (rows []history.Row, ack func() error, err error)
	// EachStored calls fn with each object's stored state.
	EachStored(fn func(id change.ObjectID, raw []byte) error) error
}

// shipBatch is how many rows one transaction writes.
const shipBatch = 500

// Shipper writes what waits in a spool to the database, in order, off
// the live stream: records reach the terminal and the sinks whatever the
// database does, and wait in the spool while it is down, slow or
// refusing.
type Shipper struct {
	// Store is the database; nil until Connect reaches it.
	Store *Store
	// Connect opens the database when Store is nil (it was down when
	// kubediff started).
	Connect func(ctx context.Context) (*Store, error)
	Spool   Spool
	Writer  Writer
	Log     *slog.Logger
	// Every is how often the spool is looked at (default: a second).
	Every time.Duration
	// Retention and EventRetention are what the database keeps (Trim),
	// looked after every trimEvery; zero keeps everything.
	Retention, EventRetention time.Duration
	trimmed                   time.Time
	// shipping serializes ShipAll: the loop and readers catching up.
	shipping sync.Mutex
}

// trimEvery is how often the shipper drops what retention no longer
// keeps: partitions are days, so there is no hurry.
const trimEvery = 10 * time.Minute

// Run ships until ctx ends: one log line when the database fails, one
// when it takes rows again, none per retry. The states of objects known
// since the history began go first (Baseline).
func (s *Shipper) Run(ctx context.Context) {
	every := s.Every
	if every <= 0 {
		every = time.Second
	}
	wait, broken, baselined := every, false, false
	for {
		err := s.connect(ctx)
		if err == nil && !baselined {
			err = s.Baseline(ctx)
			baselined = err == nil
		}
		n := 0
		if err == nil {
			n, err = s.ShipAll(ctx)
		}
		if err == nil {
			err = s.trim(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !broken:
			broken = true
			s.Log.Error("history store: cannot write; records wait in the state dir and are written once it takes them", "err", err)
		case err == nil && broken:
			broken, wait = false, every
			s.Log.Info("history store: writing again", "rows", n)
		}
		if err != nil {
			wait = min(wait*2, 30*time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// connect opens the database if it is not open yet.
func (s *Shipper) connect(ctx context.Context) error {
	if s.Store != nil {
		return nil
	}
	store, err := s.Connect(ctx)
	s.Store = store
	return err
}

// trim drops, every trimEvery, what retention no longer keeps.
func (s *Shipper) trim(ctx context.Context) error {
	if s.Retention <= 0 || time.Since(s.trimmed) < trimEvery {
		return nil
	}
	if err := s.Store.Trim(ctx, s.Writer.Cluster, s.Retention, s.EventRetention, time.Now()); err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	s.trimmed = time.Now()
	return nil
}

// ShipAll writes every row waiting, a batch per transaction, and returns
// how many it wrote.
func (s *Shipper) ShipAll(ctx context.Context) (int, error) {
	s.shipping.Lock()
	defer s.shipping.Unlock()
	n := 0
	for {
		rows, ack, err := s.Spool.TakeOutbox(shipBatch)
		if err != nil || len(rows) == 0 {
			return n, err
		}
		for i := range rows {
			s.name(&rows[i])
		}
		if err := s.Store.Write(ctx, s.Writer, rows); err != nil {
			return n, err
		}
		if err := ack(); err != nil {
			return n, fmt.Errorf("state dir: %w", err)
		}
		n += len(rows)
	}
}

// name gives a state kept alone the id its state dir names it by: its
// row carries none (such an entry has no record, hence no record id).
func (s *Shipper) name(r *history.Row) {
	if r.Kind == history.RowState && r.ID == "" {
		r.ID = "state/" + s.Writer.Instance + "/" + hex.EncodeToString(r.Key)
	}
}

// Baseline writes the state of every object the spool stores, for the
// objects no entry tells of (a state kept already stays).
func (s *Shipper) Baseline(ctx context.Context) error {
	var ids []change.ObjectID
	var states [][]byte
	flush := func() error {
		err := s.Store.Baseline(ctx, s.Writer.Cluster, ids, states)
		ids, states = ids[:0], states[:0]
		return err
	}
	err := s.Spool.EachStored(func(id change.ObjectID, raw []byte) error {
		ids, states = append(ids, id), append(states, history.PackState(raw))
		if len(ids) == shipBatch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}
