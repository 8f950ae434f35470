package history

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"iter"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/glob"
	"github.com/kubediff/kubediff/pkg/record"
)

// CurrentFunc returns an object's state as the state store holds it now
// (nil: none). An object with no kept record has had that state since
// the history began.
type CurrentFunc func(tx *bolt.Tx, group, resource, namespace, name string) []byte

// Reader answers queries from a history. It is safe for concurrent use.
type Reader struct {
	db      *bolt.DB
	current CurrentFunc
	catchUp func()
}

// NewReader reads the history in db.
func NewReader(db *bolt.DB, current CurrentFunc) *Reader {
	return &Reader{db: db, current: current}
}

// CatchingUp returns a reader of the same history that calls catchUp
// before each read: the writer's way to put what it holds in memory on
// disk first, so that a change kubediff has printed is in the answer.
func (r *Reader) CatchingUp(catchUp func()) *Reader {
	return &Reader{db: r.db, current: r.current, catchUp: catchUp}
}

// Selector picks records: of a type (group and resource), of one object
// of it (Name), in a namespace ("" in every one).
type Selector struct {
	Group, Resource, Name string
}

// Query is what Records returns: records of the selected types and
// objects (none selected: all), in a namespace ("": all), between From and
// Until (zero: unbounded), at most Limit (0: DefaultLimit) after the
// page token After, made by User when set (record.User.Named: exact,
// not a part of the name). Visible, when set, holds the types and namespaces the
// caller may see, decided before the read: records outside it are left
// out (the caller's RBAC).
type Query struct {
	Select      []Selector
	Namespace   string
	From, Until time.Time
	Limit       int
	After       string
	User        string
	// Rule, when set, keeps the records that matched a rule it names (a
	// name or a glob); Severity, when set, those whose severity is at
	// least it (record.Severities).
	Rule     string
	Severity string
	// Events selects the events listed among the records (record.
	// EventRecord): EventsAll ("" too), EventsWarnings or EventsNone.
	Events string
	// Release, when set, keeps the records of objects that release
	// applied (record.Release.Named: its name or namespace/name).
	Release string
	// Drift, when set, keeps the records made outside their object's
	// GitOps owner (gitops.via outside) and those that put such drift
	// back (gitops.reverts): the drift and its end, docs/drift.md.
	Drift   bool
	Visible *Grants
}

// Which events a query lists (Query.Events).
const (
	EventsAll      = "all"
	EventsWarnings = "warnings"
	EventsNone     = "none"
)

// warningKey is how a kept event's JSON says it is a warning (a record's
// own type is "event").
var warningKey = []byte(`"type":"Warning"`)

// listsEvent says whether q lists the event whose JSON is line.
func (q Query) listsEvent(line []byte) bool {
	switch q.Events {
	case EventsNone:
		return false
	case EventsWarnings:
		return bytes.Contains(line, warningKey)
	}
	return true
}

// DefaultLimit is a page's size when the query does not say.
const DefaultLimit = 500

// Page is a page of records, oldest first, each the JSON line `watch -o
// json` printed; Next is the token of the next page ("" at the end).
type Page struct {
	Records []json.RawMessage `json:"records"`
	Next    string            `json:"next,omitempty"`
	// Begin is when the history begins: a window from before it lacks
	// what retention dropped (nil: nothing kept yet).
	Begin *time.Time `json:"begin,omitempty"`
}

// ErrBeforeHistory says a moment is older than what the history holds.
var ErrBeforeHistory = errors.New("before the history kept")

// ErrNotFound says an object did not exist at the moment asked.
var ErrNotFound = errors.New("no such object at that moment")

// Records returns a page of the records q selects. Its Next names the
// last record the page holds, so that a token never tells of a record the
// caller was not shown.
func (r *Reader) Records(q Query) (Page, error) {
	var page Page
	start, err := startKey(q)
	if err != nil {
		return page, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	end := timeKey(untilOf(q.Until), math.MaxUint64)
	err = r.view(func(b *readBuckets) error {
		if b.empty {
			return nil
		}
		if begin := b.begin(); !begin.IsZero() {
			page.Begin = &begin
		}
		keys := b.scan(start, end)
		if ids := q.objects(); ids != nil {
			keys = b.indexed(ids, start, end) // named objects: their records only
		}
		var last []byte // the key of the page's last record
		for k := range keys {
			if !b.wanted(k, q) {
				continue // a state kept without a record, or not asked for
			}
			if len(page.Records) == limit {
				page.Next = hex.EncodeToString(last) // more may follow
				break
			}
			page.Records = append(page.Records, bytes.Clone(b.line(k)))
			last = k
		}
		return nil
	})
	return page, err
}

// line is the JSON of the record or event kept at k (nil: none, or a
// state kept without a record).
func (b *readBuckets) line(k []byte) []byte {
	if v := b.records.Get(k); v != nil {
		_, line, _ := bytes.Cut(v, []byte{0})
		return line
	}
	if b.events == nil {
		return nil
	}
	if v := b.events.Get(k); v != nil {
		_, line := decodeEvent(v)
		return line
	}
	return nil
}

// wanted says whether q asks for the record or event kept at k.
func (b *readBuckets) wanted(k []byte, q Query) bool {
	if v := b.records.Get(k); v != nil {
		id, line, _ := bytes.Cut(v, []byte{0})
		return len(line) > 0 && q.selects(change.ObjectID(id)) && q.lists(line)
	}
	if b.events == nil {
		return false
	}
	v := b.events.Get(k)
	if v == nil {
		return false
	}
	h, line := decodeEvent(v)
	return q.listsEvent(line) && q.selectsEvent(h.ids) && q.lists(line)
}

// lists says whether q's filters on what a record (or event) says keep
// the kept JSON line: its user, rules, release and drift. Both stores
// decide with it (Query.Lists).
func (q Query) lists(line []byte) bool {
	return q.madeBy(line) && q.judged(line) && q.released(line) && q.drifted(line)
}

// scan yields the keys of every record and event from start to end, in
// order.
func (b *readBuckets) scan(start, end []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		c := b.records.Cursor()
		k, _ := c.Seek(start)
		var e []byte
		var ec *bolt.Cursor
		if b.events != nil {
			ec = b.events.Cursor()
			e, _ = ec.Seek(start)
		}
		for {
			inRecords := k != nil && bytes.Compare(k, end) <= 0
			inEvents := e != nil && bytes.Compare(e, end) <= 0
			switch {
			case inRecords && (!inEvents || bytes.Compare(k, e) < 0):
				if !yield(k) {
					return
				}
				k, _ = c.Next()
			case inEvents:
				if !yield(e) {
					return
				}
				e, _ = ec.Next()
			default:
				return
			}
		}
	}
}

// indexed yields, in order, the keys of the named objects' records and
// events (their own and their owned objects') from start to end, read
// through the indexes: a few pages, where a scan of the window would
// read every record kept.
func (b *readBuckets) indexed(ids []change.ObjectID, start, end []byte) iter.Seq[[]byte] {
	var keys [][]byte
	for _, index := range []*bolt.Bucket{b.objects, b.eventObjects} {
		if index == nil {
			continue
		}
		for _, id := range ids {
			prefix := indexPrefix(id)
			c := index.Cursor()
			for k, _ := c.Seek(indexKey(id, start)); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				if key := k[len(prefix):]; bytes.Compare(key, end) <= 0 {
					keys = append(keys, key)
				}
			}
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	return slices.Values(slices.CompactFunc(keys, bytes.Equal))
}

// objects are the objects a query names, when every selector names one
// in a known namespace; nil when the query must scan.
func (q Query) objects() []change.ObjectID {
	if len(q.Select) == 0 || q.Namespace == "" {
		return nil
	}
	ids := make([]change.ObjectID, 0, len(q.Select))
	for _, s := range q.Select {
		if s.Name == "" {
			return nil
		}
		ids = append(ids, change.NewObjectID(s.Group, s.Resource, q.Namespace, s.Name))
	}
	return ids
}

// ErrBadPageToken says a page token is not one Records gave.
var ErrBadPageToken = errors.New("invalid page token: pass the next of the previous page, unchanged")

// ParsePageToken reads a page token: the key of the last record of the
// page before.
func ParsePageToken(s string) ([]byte, error) {
	k, err := hex.DecodeString(s)
	if err != nil || len(k) != 16 {
		return nil, ErrBadPageToken
	}
	return k, nil
}

// startKey is where a query's scan starts: just after the record its page
// token names, or at its From.
func startKey(q Query) ([]byte, error) {
	if q.After == "" {
		return timeKey(q.From, 0), nil
	}
	k, err := ParsePageToken(q.After)
	if err != nil {
		return nil, err
	}
	return successor(k), nil
}

// successor is the smallest key after k: k and a zero byte.
func successor(k []byte) []byte { return append(bytes.Clone(k), 0) }

func untilOf(t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(0, math.MaxInt64)
	}
	return t
}

// selects says whether q asks for the object's records, and its caller
// may see them.
func (q Query) selects(id change.ObjectID) bool {
	group, resource, namespace, _ := id.Parts()
	if q.Visible != nil && !q.Visible.Allows(group, resource, namespace) {
		return false
	}
	return q.chooses(id)
}

// chooses says whether q's namespace and selectors name the object.
func (q Query) chooses(id change.ObjectID) bool {
	group, resource, namespace, name := id.Parts()
	if q.Namespace != "" && namespace != q.Namespace {
		return false
	}
	if len(q.Select) == 0 {
		return true
	}
	for _, s := range q.Select {
		// An event's header names its object as keys do (idKey).
		if s.Group == group && s.Resource == resource && (s.Name == "" || s.Name == name || keyPart(s.Name) == name) {
			return true
		}
	}
	return false
}

// selectsEvent says whether q asks for an event about ids[0], whose
// owners are the rest, and its caller may see it: q names the object or
// one of its owners, and the caller may list the object's type and
// Events in its namespace (EventsScope).
func (q Query) selectsEvent(ids []change.ObjectID) bool {
	if len(ids) == 0 {
		return false
	}
	group, resource, namespace, _ := ids[0].Parts()
	if q.Visible != nil {
		events := EventsScope(namespace)
		if !q.Visible.Allows(group, resource, namespace) || !q.Visible.Allows(events.Group, events.Resource, events.Namespace) {
			return false
		}
	}
	return slices.ContainsFunc(ids, q.chooses)
}

// EventsScope is the access an event about an object in namespace needs
// besides the object's type: list core v1 Events in its namespace, or,
// for a cluster-scoped object (a Node), in default, where Kubernetes
// writes the Events about those.
func EventsScope(namespace string) Scope {
	if namespace == "" {
		namespace = "default"
	}
	return Scope{Group: "", Resource: "events", Namespace: namespace}
}

// userKey is how a kept record's JSON names its user: a record without
// it is passed over without being decoded.
var userKey = []byte(`"user":{`)

// madeBy says whether the record (a kept JSON line) was made by the user
// q asks for, or q asks for none.
func (q Query) madeBy(line []byte) bool {
	if q.User == "" {
		return true
	}
	if !bytes.Contains(line, userKey) {
		return false
	}
	var c struct {
		User *record.User `json:"user"`
	}
	return json.Unmarshal(line, &c) == nil && c.User.Named(q.User)
}

// releaseKey is how a kept record's JSON names its release: a record
// without it is passed over without being decoded.
var releaseKey = []byte(`"release":{`)

// released says whether the record (a kept JSON line) names the release
// q asks for, or q asks for none.
func (q Query) released(line []byte) bool {
	if q.Release == "" {
		return true
	}
	if !bytes.Contains(line, releaseKey) {
		return false
	}
	var c struct {
		Release *record.Release `json:"release"`
	}
	return json.Unmarshal(line, &c) == nil && c.Release.Named(q.Release)
}

// gitopsKey is how a kept record's JSON says how it stands to its
// object's GitOps owner: a record without it is passed over without
// being decoded.
var gitopsKey = []byte(`"gitops":{`)

// drifted says whether the record (a kept JSON line) drifted from its
// object's declared state or put such drift back, or q asks for
// neither. An event never does.
func (q Query) drifted(line []byte) bool {
	if !q.Drift {
		return true
	}
	if !bytes.Contains(line, gitopsKey) {
		return false
	}
	var c struct {
		GitOps *record.GitOps `json:"gitops"`
	}
	return json.Unmarshal(line, &c) == nil && c.GitOps != nil && (c.GitOps.Via == record.ViaOutside || c.GitOps.Reverts != "")
}

// rulesKey is how a kept record's JSON names the rules it matched: a
// record without it is passed over without being decoded.
var rulesKey = []byte(`"rules":[`)

// judged says whether the record (a kept JSON line) matched the rule and
// has the severity q asks for, or q asks for neither.
func (q Query) judged(line []byte) bool {
	if q.Rule == "" && q.Severity == "" {
		return true
	}
	if !bytes.Contains(line, rulesKey) {
		return false
	}
	var c struct {
		Rules    []string `json:"rules"`
		Severity string   `json:"severity"`
	}
	if json.Unmarshal(line, &c) != nil {
		return false
	}
	if q.Rule != "" && !slices.ContainsFunc(c.Rules, func(name string) bool { return glob.MatchAny([]string{q.Rule}, name) }) {
		return false
	}
	return record.SeverityRank(c.Severity) >= record.SeverityRank(q.Severity)
}

// At returns the object's state at t as kubediff had it: pruned and
// redacted JSON. ErrNotFound when it did not exist then; ErrBeforeHistory
// when t is older than what is kept about it.
func (r *Reader) At(id change.ObjectID, t time.Time) ([]byte, error) {
	var state []byte
	err := r.view(func(b *readBuckets) error {
		var err error
		state, err = b.at(id, t, r.current)
		return err
	})
	return state, err
}

func (b *readBuckets) at(id change.ObjectID, t time.Time, current CurrentFunc) ([]byte, error) {
	if b.empty {
		return nil, ErrBeforeHistory
	}
	prefix := indexPrefix(id)
	c := b.objects.Cursor()
	seek := indexKey(id, timeKey(t, math.MaxUint64))
	next, _ := c.Seek(seek)
	var last []byte
	if next == nil {
		last, _ = c.Last()
	} else {
		last, _ = c.Prev()
	}
	if last != nil && bytes.HasPrefix(last, prefix) {
		return b.state(b.after, last[len(prefix):])
	}
	if t.Before(b.begin()) {
		return nil, ErrBeforeHistory
	}
	if next, _ = c.Seek(seek); next != nil && bytes.HasPrefix(next, prefix) {
		// t is before the object's oldest kept record: its state before it.
		return b.state(b.before, next[len(prefix):])
	}
	if current != nil {
		group, resource, namespace, name := id.Parts()
		if raw := current(b.tx, group, resource, namespace, name); raw != nil {
			return bytes.Clone(raw), nil
		}
	}
	return nil, ErrNotFound
}

// state unpacks the state kept at k in bucket; none is ErrNotFound (the
// object was deleted, or not yet created).
func (b *readBuckets) state(bucket *bolt.Bucket, k []byte) ([]byte, error) {
	v := bucket.Get(k)
	if v == nil {
		return nil, ErrNotFound
	}
	return unpackState(v)
}

// Begin is the moment from which the history knows every watched
// object's state (zero: nothing kept yet).
func (r *Reader) Begin() (time.Time, error) {
	var t time.Time
	err := r.view(func(b *readBuckets) error { t = b.begin(); return nil })
	return t, err
}

// Resolve returns the types kept whose names match name as kubectl
// matches them ("deploy", "deployments.apps", "Deployment"); every type
// kept for "".
func (r *Reader) Resolve(name string) ([]change.Resource, error) {
	var out []change.Resource
	err := r.view(func(b *readBuckets) error {
		if b.empty {
			return nil
		}
		return b.types.ForEach(func(_, v []byte) error {
			var t TypeNames
			if json.Unmarshal(v, &t) == nil && (name == "" || t.Type().Matches(name)) {
				out = append(out, t.Type())
			}
			return nil
		})
	})
	return out, err
}
