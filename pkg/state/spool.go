package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/record"
)

// spoolsBucket holds a bucket per sink: sequence number → record. Its
// name on disk stays "queues", which existing state dirs hold.
var spoolsBucket = []byte("queues")

// Spool is one sink's undelivered records, in order, kept in the state
// store (the disk behind notify's spooled queue): a record appended is written with the store's next flush, in the
// same transaction as the object states noted after it, so a crash never
// leaves an object's new state on disk without the record that reported
// it. A record delivered before that flush is never written at all, so a
// sink that keeps up costs no disk writes.
//
// Records are numbered in order; the spool holds those from Head to
// Tail-1. One goroutine reads and removes (the sink's delivery), others
// append.
type Spool struct {
	s    *Store
	name []byte

	// Guarded by s.mu.
	head, tail uint64
	// sizes is each record's encoded size from head on, bytes their sum.
	// A record appended while the sink has taken every other one is not
	// encoded until a flush writes it (0 until then): most are delivered
	// before and never need encoding. Once records wait, each is.
	sizes   []int
	bytes   int64
	pending []entry // appended, not yet written: the last len(pending) records
	// diskHead is head as last written: records below it are deleted.
	diskHead uint64
}

type entry struct {
	seq  uint64
	rec  record.Change
	data []byte // encoded (nil: not yet)
}

// stored is a record as written: Change leaves Unified (text output's
// diff) out of its JSON, the spool must not.
type stored struct {
	record.Change
	Unified string `json:"unified,omitempty"`
}

// Spool returns the named sink's spool, with what an earlier run left
// undelivered.
func (s *Store) Spool(name string) (*Spool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.spools[name]; q != nil {
		return q, nil
	}
	q := &Spool{s: s, name: []byte(name), head: 1, tail: 1}
	err := guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(spoolsBucket).Bucket(q.name)
			if b == nil {
				return nil
			}
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				seq := binary.BigEndian.Uint64(k)
				if len(q.sizes) == 0 {
					q.head = seq
				}
				// A gap (a record lost to damage) counts as empty records.
				for q.head+uint64(len(q.sizes)) < seq {
					q.sizes = append(q.sizes, 0)
				}
				q.sizes = append(q.sizes, len(v))
				q.bytes += int64(len(v))
			}
			q.tail = q.head + uint64(len(q.sizes))
			q.diskHead = q.head
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state store: queue %s: %w", name, err)
	}
	s.spools[name] = q
	return q, nil
}

// DropSpoolsExcept deletes the spools of sinks no longer configured,
// saying how many records each held.
func (s *Store) DropSpoolsExcept(names []string) error {
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		spools := tx.Bucket(spoolsBucket)
		var gone [][]byte
		err := spools.ForEachBucket(func(name []byte) error {
			if !keep[string(name)] {
				gone = append(gone, bytes.Clone(name))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, name := range gone {
			if n := spools.Bucket(name).Stats().KeyN; n > 0 {
				s.log.Warn("state dir holds undelivered records of a sink no longer configured: dropped", "sink", string(name), "records", n)
			}
			if err := spools.DeleteBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
}

// Append adds c at the tail. While the sink keeps up (nothing else
// waits), c is encoded only if a flush comes before the sink takes it:
// stdout takes it within milliseconds, and encoding each record was 9%
// of a kubediff's CPU per update with a state dir (make bench). Once
// records wait, each is encoded as it comes, so the spool's size is
// exact where queueMaxBytes bounds it.
func (q *Spool) Append(c record.Change) error {
	q.s.mu.Lock()
	waiting := q.tail > q.head
	q.s.mu.Unlock()
	var data []byte
	if waiting {
		var err error
		if data, err = encodeStored(c); err != nil {
			return err
		}
	}
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	if waiting {
		if err := q.sizeWaiting(); err != nil {
			return err
		}
	}
	q.pending = append(q.pending, entry{seq: q.tail, rec: c, data: data})
	q.sizes = append(q.sizes, len(data))
	q.bytes += int64(len(data))
	q.tail++
	return nil
}

// sizeWaiting counts the records appended while the sink kept up that
// wait now. It leaves pending's entries as they are: a flush may be
// reading them. The caller holds s.mu.
func (q *Spool) sizeWaiting() error {
	for _, e := range q.pending {
		if e.seq < q.head || q.sizes[e.seq-q.head] > 0 {
			continue
		}
		data, err := encodeStored(e.rec)
		if err != nil {
			return err
		}
		q.sizes[e.seq-q.head] = len(data)
		q.bytes += int64(len(data))
	}
	return nil
}

// encodeStored is a record as the spool writes it.
func encodeStored(c record.Change) ([]byte, error) {
	return json.Marshal(stored{Change: c, Unified: c.Unified})
}

// Size is how many records the spool holds, and their encoded bytes.
func (q *Spool) Size() (records int, bytes int64) {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	return int(q.tail - q.head), q.bytes
}

// Head is the number of the oldest record held.
func (q *Spool) Head() uint64 {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	return q.head
}

// Tail is the number the next record appended gets.
func (q *Spool) Tail() uint64 {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	return q.tail
}

// Read returns up to limit records from number from on, in order, and the
// number to read from next. A record that cannot be decoded (damage) is
// skipped and counted.
func (q *Spool) Read(from uint64, limit int) (recs []record.Change, next uint64, skipped int, err error) {
	q.s.mu.Lock()
	from = max(from, q.head)
	next = from
	if len(q.pending) > 0 && from >= q.pending[0].seq {
		for _, e := range q.pending[min(from-q.pending[0].seq, uint64(len(q.pending))):] {
			if len(recs) == limit {
				break
			}
			recs = append(recs, e.rec)
			next = e.seq + 1
		}
		q.s.mu.Unlock()
		return recs, next, 0, nil
	}
	onDiskUntil := q.tail // records below are on disk (or being written)
	if len(q.pending) > 0 {
		onDiskUntil = q.pending[0].seq
	}
	q.s.mu.Unlock()
	// Only the reader removes records, so those from on stay on disk.
	err = guard(func() error {
		return q.s.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(spoolsBucket).Bucket(q.name)
			if b == nil {
				return nil
			}
			c := b.Cursor()
			for k, v := c.Seek(seqKey(from)); k != nil && len(recs) < limit; k, v = c.Next() {
				seq := binary.BigEndian.Uint64(k)
				if seq >= onDiskUntil {
					break
				}
				next = seq + 1
				rec, err := decodeRecord(v)
				if err != nil {
					skipped++
					continue
				}
				recs = append(recs, rec)
			}
			return nil
		})
	})
	if err == nil && len(recs) == 0 && skipped == 0 {
		next = max(next, onDiskUntil) // nothing left on disk below the pending records
	}
	return recs, next, skipped, err
}

// Remove forgets the records up to number through: delivered, or given up
// on. Those already written are deleted with the next flush.
func (q *Spool) Remove(through uint64) {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	for q.head <= through && q.head < q.tail {
		q.bytes -= int64(q.sizes[0])
		q.sizes = q.sizes[1:]
		q.head++
	}
	for len(q.pending) > 0 && q.pending[0].seq < q.head {
		q.pending = q.pending[1:]
	}
}

// flushed is what one flush writes of a spool; write notes each entry's
// encoded size (0: not written).
type flushed struct {
	q       *Spool
	head    uint64
	entries []entry
	sizes   []int
}

// snapshot takes what the next flush writes, if anything. The caller
// holds s.mu.
func (q *Spool) snapshot() (flushed, bool) {
	return flushed{q: q, head: q.head, entries: q.pending, sizes: make([]int, len(q.pending))},
		len(q.pending) > 0 || q.head != q.diskHead
}

// write deletes the removed records and writes the appended ones.
func (f flushed) write(tx *bolt.Tx) error {
	b, err := tx.Bucket(spoolsBucket).CreateBucketIfNotExists(f.q.name)
	if err != nil {
		return err
	}
	var gone [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) < f.head; k, _ = c.Next() {
		gone = append(gone, bytes.Clone(k))
	}
	for _, k := range gone {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	for i, e := range f.entries {
		if e.seq >= f.head {
			data := e.data
			if data == nil {
				var err error
				if data, err = encodeStored(e.rec); err != nil {
					return err
				}
			}
			f.sizes[i] = len(data)
			if err := b.Put(seqKey(e.seq), data); err != nil {
				return err
			}
		}
	}
	return nil
}

// sized counts, in the spool's size, each record the flush encoded that
// is still held, whether or not the write was committed (a disk that is
// full still holds them, counted against queueMaxBytes). The caller holds
// s.mu.
func (f flushed) sized() {
	q := f.q
	for i, e := range f.entries {
		if f.sizes[i] > 0 && e.seq >= q.head && q.sizes[e.seq-q.head] == 0 {
			q.sizes[e.seq-q.head] = f.sizes[i]
			q.bytes += int64(f.sizes[i])
		}
	}
}

// written drops from memory the records the flush wrote. The caller
// holds s.mu.
func (f flushed) written() {
	q := f.q
	q.diskHead = f.head
	if len(f.entries) == 0 {
		return
	}
	last := f.entries[len(f.entries)-1].seq
	for len(q.pending) > 0 && q.pending[0].seq <= last {
		q.pending = q.pending[1:]
	}
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func decodeRecord(v []byte) (record.Change, error) {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber() // numbers come back as written, not as float64
	var s stored
	if err := d.Decode(&s); err != nil {
		return record.Change{}, err
	}
	s.Change.Unified = s.Unified
	return s.Change, nil
}
