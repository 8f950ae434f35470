package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
)

// Source is a state dir's history to import.
type Source interface {
	Begin() (time.Time, error)
	Types() ([]history.Row, error)
	Rows(from []byte, max int) (rows []history.Row, next []byte, err error)
}

// ImportInstance names a state dir that never shipped (it has no
// instance id of its own) by its cluster and the moment its history
// began: the same for every import of it, so that a second import keeps
// nothing twice.
func ImportInstance(cluster string, begin time.Time) string {
	sum := sha256.Sum256([]byte(cluster + "|" + begin.UTC().Format(time.RFC3339Nano)))
	return "import-" + hex.EncodeToString(sum[:8])
}

// Import copies a state dir's history and stored states into the
// database as w's, and returns how many entries it copied. Entries kept
// already are passed over: an import done twice, or of a state dir that
// also shipped them, keeps each once.
func (s *Store) Import(ctx context.Context, w Writer, src Source, stored func(fn func(id change.ObjectID, raw []byte) error) error) (int, error) {
	begin, err := src.Begin()
	if err != nil || begin.IsZero() {
		return 0, err
	}
	types, err := src.Types()
	if err != nil {
		return 0, err
	}
	head := append([]history.Row{{Kind: history.RowBegin, Key: history.Key(begin, 0)}}, types...)
	if err := s.Write(ctx, w, head); err != nil {
		return 0, err
	}
	shipper := &Shipper{Store: s, Writer: w}
	n := 0
	for from := []byte(nil); ; {
		rows, next, err := src.Rows(from, shipBatch)
		if err != nil {
			return n, err
		}
		for i := range rows {
			shipper.name(&rows[i])
		}
		if err := s.Write(ctx, w, rows); err != nil {
			return n, err
		}
		n += len(rows)
		if next == nil {
			break
		}
		from = next
	}
	shipper.Spool = storedOnly(stored)
	return n, shipper.Baseline(ctx)
}

// storedOnly is a spool of stored states alone.
type storedOnly func(fn func(id change.ObjectID, raw []byte) error) error

func (storedOnly) TakeOutbox(int) ([]history.Row, func() error, error) { return nil, nil, nil }

func (s storedOnly) EachStored(fn func(id change.ObjectID, raw []byte) error) error { return s(fn) }
