package history

import (
	"bytes"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/change"
)

// trim drops the oldest records while they are older than the retention
// or the history holds more than its bound. An object's state before its
// oldest kept record stays known: the state after a dropped record is
// carried to the object's next record as its state before.
func (b *buckets) trim(p Policy, now time.Time) error {
	size := int64(b.counter(bytesKey))
	cutoff, eventCutoff := now.Add(-p.Retention), now.Add(-p.eventRetention())
	var last []byte // the last record dropped
	dropped := false
	// The oldest record, or event, is always the first: each pass drops
	// one. Past the bound, whichever is older goes; past retention, each
	// goes by its own.
	for n := 0; n < maxTrim; n++ {
		k, _ := b.records.Cursor().First()
		e, _ := b.events.Cursor().First()
		over := !p.On() || size > p.MaxBytes
		switch {
		case k != nil && (over && (e == nil || bytes.Compare(k, e) < 0) || keyTime(k).Before(cutoff)):
			last = bytes.Clone(k)
			size -= b.sizeOf(last)
			carried, err := b.drop(last)
			if err != nil {
				return err
			}
			size += carried
		case e != nil && (over || keyTime(e).Before(eventCutoff)):
			freed, err := b.dropEvent(bytes.Clone(e))
			if err != nil {
				return err
			}
			size -= freed
		default:
			n = maxTrim
			continue
		}
		dropped = true
	}
	if !dropped {
		return nil
	}
	if last != nil {
		if begin := keyTime(last).Add(time.Nanosecond); begin.After(keyTime(b.meta.Get(beginKey))) {
			if err := b.meta.Put(beginKey, timeKey(begin, 0)); err != nil {
				return err
			}
		}
	}
	return b.setCounters(b.counter(seqKey), size)
}

// sizeOf is what the record at k takes, as put counted it.
func (b *buckets) sizeOf(k []byte) int64 {
	v := b.records.Get(k)
	id, _, _ := bytes.Cut(v, []byte{0})
	n := len(k) + len(v) + len(indexKey(change.ObjectID(id), k))
	for _, states := range [][]byte{b.before.Get(k), b.after.Get(k)} {
		if states != nil {
			n += len(k) + len(states)
		}
	}
	return int64(n)
}

// drop deletes the record at k and what belongs to it, and returns the
// bytes its state carried to the object's next record takes.
func (b *buckets) drop(k []byte) (carried int64, err error) {
	id, _, _ := bytes.Cut(b.records.Get(k), []byte{0})
	index := indexKey(change.ObjectID(id), k)
	if after := b.after.Get(k); after != nil {
		if carried, err = b.carry(change.ObjectID(id), index, bytes.Clone(after)); err != nil {
			return 0, err
		}
	}
	if err := b.objects.Delete(index); err != nil {
		return 0, err
	}
	for _, bucket := range []*bolt.Bucket{b.records, b.after, b.before} {
		if err := bucket.Delete(k); err != nil {
			return 0, err
		}
	}
	return carried, nil
}

// carry makes after the state before the object's record that follows
// index, unless that record knows it already.
func (b *buckets) carry(id change.ObjectID, index, after []byte) (int64, error) {
	c := b.objects.Cursor()
	c.Seek(index)
	next, _ := c.Next()
	if next == nil || !bytes.HasPrefix(next, indexPrefix(id)) {
		return 0, nil
	}
	nextKey := bytes.Clone(next[len(next)-16:])
	if b.before.Get(nextKey) != nil {
		return 0, nil
	}
	return int64(len(nextKey) + len(after)), b.before.Put(nextKey, after)
}
