package history

import (
	"bytes"
	"encoding/binary"
)

// Stats says what a history holds: records, states kept without a record
// (quiet changes), and the bytes all take as retention counts them;
// events (one entry per object and reason) and the bytes they take of
// those.
type Stats struct {
	Records, QuietStates int
	Bytes                int64
	Events               int
	EventBytes           int64
}

// Stats counts what the history holds. It reads every key: for figures
// and tests, not for a request's path.
func (r *Reader) Stats() (Stats, error) {
	var s Stats
	err := r.view(func(b *readBuckets) error {
		if b.empty {
			return nil
		}
		if v := b.meta.Get(bytesKey); len(v) == 8 {
			s.Bytes = int64(binary.BigEndian.Uint64(v))
		}
		if v := b.meta.Get(eventBytesKey); len(v) == 8 {
			s.EventBytes = int64(binary.BigEndian.Uint64(v))
		}
		if b.events != nil {
			s.Events = b.events.Stats().KeyN
		}
		return b.records.ForEach(func(_, v []byte) error {
			if _, line, _ := bytes.Cut(v, []byte{0}); len(line) == 0 {
				s.QuietStates++
			} else {
				s.Records++
			}
			return nil
		})
	})
	return s, err
}
