package history

import (
	"bytes"
	"encoding/binary"
)

// Stats says what a history holds: records, states kept without a record
// (quiet changes), and the bytes both take as retention counts them.
type Stats struct {
	Records, QuietStates int
	Bytes                int64
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
