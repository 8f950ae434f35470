package history

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

// Events (record.EventRecord) are kept apart from records, in the bucket
// events, one entry per object and reason: a repeat of an Event (the same
// Event object counting up, or another with the same reason) folds into
// the entry, which moves to the time it last happened. So a rollout stuck
// on a quota for a day is one entry, kept as long as it goes on, and
// retention (Policy.EventRetention) drops events that stopped. An entry
// is indexed under its object and each of the object's owners, so that
// a Deployment's history lists its Pods' events.

// eventHeader is what an events value holds before its JSON: the reason,
// the object's id and its owners' ids, so that an entry can be dropped
// (its index entries and its fold) without decoding it.
type eventHeader struct {
	reason string
	ids    []change.ObjectID // the object's, then its owners'
}

func (h eventHeader) encode(line []byte) []byte {
	out := []byte(h.reason)
	for _, id := range h.ids {
		out = append(append(out, 1), id...)
	}
	return append(append(out, 0), line...)
}

// decodeEvent splits an events value into its header and JSON line.
func decodeEvent(v []byte) (eventHeader, []byte) {
	head, line, _ := bytes.Cut(v, []byte{0})
	parts := bytes.Split(head, []byte{1})
	h := eventHeader{reason: string(parts[0])}
	for _, p := range parts[1:] {
		h.ids = append(h.ids, change.ObjectID(p))
	}
	return h, line
}

// foldKey names the entry an object's events of one reason fold into.
// The reason is a key part (keyPart): core v1 does not bound it, and one
// key over bbolt's limit would fail every later write.
func foldKey(id change.ObjectID, reason string) []byte {
	return append(indexPrefix(id), keyPart(reason)...)
}

// headerOf is the header of an event about id with owners: the reason and
// ids as keys have them (keyPart, idKey), so that none holds the header's
// separators and dropping the entry finds the keys it was kept under.
func headerOf(reason string, id change.ObjectID, owners []change.ObjectID) eventHeader {
	h := eventHeader{reason: keyPart(reason)}
	for _, x := range append([]change.ObjectID{id}, owners...) {
		h.ids = append(h.ids, change.ObjectID(idKey(x)))
	}
	return h
}

// fold is what eventfold keeps of an entry: its key, and the last Event
// object folded into it (its name and count), so that the same object
// counting up adds only what it added.
type fold struct {
	key   []byte
	count int
	name  string
}

func (f fold) encode() []byte {
	out := append(bytes.Clone(f.key), binary.BigEndian.AppendUint64(nil, uint64(max(f.count, 0)))...)
	return append(out, f.name...)
}

func decodeFold(v []byte) (fold, bool) {
	if len(v) < 24 {
		return fold{}, false
	}
	return fold{key: bytes.Clone(v[:16]), count: int(binary.BigEndian.Uint64(v[16:24])), name: string(v[24:])}, true
}

// putEvent keeps an event record, folding it into its object's entry of
// the same reason when there is one. It returns the bytes it adds.
func (b *buckets) putEvent(e journal.Entry, k []byte) (int64, error) {
	c := e.Change
	if c.Event == nil {
		return 0, fmt.Errorf("history: event record of %s without its event", c.ObjectName())
	}
	id := ObjectOf(c)
	latest := *c.Event
	var freed int64
	var folded []byte
	if f, ok := decodeFold(b.eventFold.Get(foldKey(id, latest.Reason))); ok {
		if old := b.events.Get(f.key); old != nil {
			folded = f.key
			c.Event = merge(old, f, latest)
			var err error
			if freed, err = b.dropEvent(f.key); err != nil {
				return 0, err
			}
		}
	}
	c.Time = c.Event.Last
	k = timeKey(time.Time(c.Time).Truncate(time.Millisecond), binary.BigEndian.Uint64(k[8:]))
	line, err := json.Marshal(c)
	if err != nil {
		return 0, fmt.Errorf("history: encode event: %w", err)
	}
	h := headerOf(latest.Reason, id, e.Owners)
	// An event's id names its entry in this state dir: the shipper adds
	// which state dir that is (events fold per state dir).
	if err := b.ship(Row{Kind: RowEvent, Key: k, Object: h.ids[0], Line: line, EventIDs: h.ids, Drops: folded}); err != nil {
		return 0, err
	}
	puts := []struct{ k, v []byte }{{k, h.encode(line)}, {foldKey(id, latest.Reason), fold{key: k, count: latest.Count, name: latest.Name}.encode()}}
	if err := b.events.Put(puts[0].k, puts[0].v); err != nil {
		return 0, err
	}
	if err := b.eventFold.Put(puts[1].k, puts[1].v); err != nil {
		return 0, err
	}
	size := int64(len(puts[0].k) + len(puts[0].v) + len(puts[1].k) + len(puts[1].v))
	for _, owner := range h.ids {
		if err := b.eventObjects.Put(indexKey(owner, k), []byte(h.ids[0])); err != nil {
			return 0, err
		}
		size += int64(len(indexKey(owner, k)) + len(h.ids[0]))
	}
	if err := b.addEventBytes(size); err != nil {
		return 0, err
	}
	return size - freed, b.putType(e.Resource)
}

// merge folds the latest occurrence into the entry kept (old, whose fold
// is f): the same Event object adds what its count grew by, another adds
// its count; the times widen, and the latest message and reporter stay.
func merge(old []byte, f fold, latest record.Event) *record.Event {
	_, line := decodeEvent(old)
	var kept record.Change
	if json.Unmarshal(line, &kept) != nil || kept.Event == nil {
		return &latest
	}
	e := *kept.Event
	added := latest.Count
	if latest.Name == f.name && latest.Name != "" {
		added = max(0, latest.Count-f.count)
	}
	e.Count += added
	if time.Time(latest.First).Before(time.Time(e.First)) {
		e.First = latest.First
	}
	if !time.Time(latest.Last).Before(time.Time(e.Last)) {
		e.Last, e.Message, e.ReportingController, e.Type = latest.Last, latest.Message, latest.ReportingController, latest.Type
		e.Namespace, e.Name = latest.Namespace, latest.Name
	}
	return &e
}

// dropEvent deletes the event entry at k, its index entries and its fold
// (when it is the entry's), and returns the bytes they took.
func (b *buckets) dropEvent(k []byte) (int64, error) {
	v := b.events.Get(k)
	if v == nil {
		return 0, nil
	}
	h, _ := decodeEvent(v)
	size := int64(len(k) + len(v))
	if len(h.ids) > 0 {
		fk := foldKey(h.ids[0], h.reason)
		if f, ok := decodeFold(b.eventFold.Get(fk)); ok && bytes.Equal(f.key, k) {
			size += int64(len(fk) + len(f.encode()))
			if err := b.eventFold.Delete(fk); err != nil {
				return 0, err
			}
		}
	}
	for _, owner := range h.ids {
		size += int64(len(indexKey(owner, k)) + len(h.ids[0]))
		if err := b.eventObjects.Delete(indexKey(owner, k)); err != nil {
			return 0, err
		}
	}
	if err := b.events.Delete(k); err != nil {
		return 0, err
	}
	return size, b.addEventBytes(-size)
}

// addEventBytes keeps the bytes events take, for Stats.
func (b *buckets) addEventBytes(n int64) error {
	total := max(int64(b.counter(eventBytesKey))+n, 0)
	return b.meta.Put(eventBytesKey, binary.BigEndian.AppendUint64(nil, uint64(total)))
}
