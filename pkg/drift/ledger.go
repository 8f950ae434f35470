package drift

import (
	"cmp"
	"slices"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// Ledger follows drift through records as the history kept them: which
// outside changes are still drifted, and which came back. It reads only
// what the records say (gitops, changes), so it answers alike from a
// state dir, a running kubediff or PostgreSQL, after a restart too. It
// ends a drift as the Classifier did when it wrote the records: a record
// naming it in gitops.reverts, the owner's write of each drifted field
// (declaring it anew), an outside write that put a field back (it
// changed the field and does not list it as drift), or the object's
// deletion (nothing is drifted of what is gone; the drift is dropped).
// Unlike the Classifier, it also follows drift whose declared value was
// unknown: the owner's next write of the field ends it.
type Ledger struct {
	open   map[string]*Drift // by object (uid)
	closed []Drift
}

// Drift is one object's drift from its declared state, from the outside
// change that started it, and for drift that came back, the write that
// ended it.
type Drift struct {
	// Owner names the GitOps owner (Via, Drift, Reverts left empty).
	Owner record.GitOps `json:"owner"`
	// Object is the drifted object (apiVersion, kind, resource,
	// namespace, name, uid).
	Object Object `json:"object"`
	// Since and Record are the time and id of the outside change that
	// started it; By who made that change (as text output says it).
	Since  time.Time `json:"since"`
	Record string    `json:"record"`
	By     string    `json:"by,omitempty"`
	// DeclaredFrom says where the declared values came from (the
	// outside record's gitops.declaredFrom).
	DeclaredFrom string `json:"declaredFrom,omitempty"`
	// Fields are the drifted fields, in path order: the declared value
	// noted when each drifted and the value last seen.
	Fields []Field `json:"fields"`
	// Until, EndedBy and Seconds are set on drift that came back: when,
	// the id of the record that ended it, and how long it lasted.
	Until   *time.Time `json:"until,omitempty"`
	EndedBy string     `json:"endedBy,omitempty"`
	Seconds float64    `json:"driftSeconds,omitempty"`
	// back are the fields put back while others were still drifted.
	back []Field
}

// Object names a record's object.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Resource   string `json:"resource"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// Field is one drifted field: its declared value (absent with
// Undeclared for a field added outside the declared state, absent alone
// when unknown) and its value now (absent: removed).
type Field struct {
	Path       string `json:"path"`
	Field      string `json:"field"`
	Declared   any    `json:"declared,omitempty"`
	Undeclared bool   `json:"undeclared,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	Now        any    `json:"now,omitempty"`
}

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger { return &Ledger{open: map[string]*Drift{}} }

// Add reads the next record. Each object's records must come in the
// order they were made.
func (l *Ledger) Add(c record.Change) {
	key := objectKey(c)
	if c.Type == record.Deleted {
		delete(l.open, key)
		return
	}
	g, d := c.GitOps, l.open[key]
	if d != nil {
		d.follow(c)
		if g != nil && g.Reverts != "" {
			l.end(key, c)
			d = nil
		}
	}
	if g != nil && g.Via == record.ViaOutside && len(g.Drift) > 0 {
		if d == nil {
			d = start(c)
			l.open[key] = d
		}
		d.note(g.Drift)
	}
	if d != nil && len(d.Fields) == 0 {
		l.end(key, c) // every field back, though no record said reverts
	}
}

// follow ends the fields of d that c wrote back (keeping their last
// drifted value), and notes the value now of those it changed otherwise.
func (d *Drift) follow(c record.Change) {
	g := c.GitOps
	d.Fields = slices.DeleteFunc(d.Fields, func(f Field) bool {
		back := false
		switch {
		case g != nil && g.Via == record.ViaSync:
			back = written(c.Changes, f.Path) // the owner declared it anew
		case g != nil && g.Via == record.ViaOutside:
			_, changed := changeAt(c.Changes, f.Path)
			back = changed && !slices.ContainsFunc(g.Drift, func(df record.DriftedField) bool { return df.Path == f.Path })
		}
		if back {
			d.back = append(d.back, f)
		}
		return back
	})
	for i, f := range d.Fields {
		if fc, ok := changeAt(c.Changes, f.Path); ok {
			d.Fields[i].Now = fc.To
		}
	}
}

// changeAt is the change of changes at p exactly.
func changeAt(changes []record.FieldChange, p string) (record.FieldChange, bool) {
	for _, fc := range changes {
		if fc.Path == p {
			return fc, true
		}
	}
	return record.FieldChange{}, false
}

// start is the drift an outside change starts.
func start(c record.Change) *Drift {
	return &Drift{
		Owner:  record.GitOps{Tool: c.GitOps.Tool, Kind: c.GitOps.Kind, Namespace: c.GitOps.Namespace, Name: c.GitOps.Name},
		Object: Object{APIVersion: c.APIVersion, Kind: c.Kind, Resource: c.Resource, Namespace: c.Namespace, Name: c.Name, UID: c.UID},
		Since:  time.Time(c.Time), Record: c.ID, By: c.By(), DeclaredFrom: c.GitOps.DeclaredFrom,
	}
}

// note adds the fields an outside change drifted; a field drifted
// already keeps the declared value noted first (the Classifier's rule)
// and takes the value now.
func (d *Drift) note(fields []record.DriftedField) {
	for _, df := range fields {
		i := slices.IndexFunc(d.Fields, func(f Field) bool { return f.Path == df.Path })
		if i >= 0 {
			d.Fields[i].Now = df.Now
			continue
		}
		d.Fields = append(d.Fields, Field{Path: df.Path, Field: df.Field, Declared: df.Declared, Undeclared: df.Undeclared,
			Truncated: df.Truncated, Now: df.Now})
	}
	sortFields(d.Fields)
}

func sortFields(fs []Field) {
	slices.SortFunc(fs, func(a, b Field) int { return cmp.Compare(a.Path, b.Path) })
}

// end closes the object's open drift with c, the write that ended it.
func (l *Ledger) end(key string, c record.Change) {
	d := l.open[key]
	delete(l.open, key)
	until := time.Time(c.Time)
	d.Until, d.EndedBy, d.Seconds = &until, c.ID, seconds(until.Sub(d.Since))
	if c.GitOps != nil && c.GitOps.Reverts != "" && c.GitOps.DriftSeconds > 0 {
		d.Seconds = c.GitOps.DriftSeconds // as the record said it
	}
	d.Fields = append(d.back, d.Fields...) // what drifted, each with the last drifted value seen
	d.back = nil
	sortFields(d.Fields)
	l.closed = append(l.closed, *d)
}

// Forget drops the open drift d (as Open returned it): its object's
// records are about to be read again (Add) from d's start.
func (l *Ledger) Forget(d Drift) { delete(l.open, d.Object.key()) }

// Open returns the drift not ended, by owner and object.
func (l *Ledger) Open() []Drift {
	out := make([]Drift, 0, len(l.open))
	for _, d := range l.open {
		if len(d.Fields) > 0 {
			out = append(out, *d)
		}
	}
	sortDrift(out)
	return out
}

// Ended returns the drift that came back at since or later, by owner
// and object.
func (l *Ledger) Ended(since time.Time) []Drift {
	var out []Drift
	for _, d := range l.closed {
		if !d.Until.Before(since) {
			out = append(out, d)
		}
	}
	sortDrift(out)
	return out
}

func sortDrift(ds []Drift) {
	slices.SortStableFunc(ds, func(a, b Drift) int {
		return cmp.Or(cmp.Compare(OwnerLabel(a.Owner), OwnerLabel(b.Owner)), cmp.Compare(a.Object.Namespace, b.Object.Namespace),
			cmp.Compare(a.Object.Kind, b.Object.Kind), cmp.Compare(a.Object.Name, b.Object.Name), a.Since.Compare(b.Since))
	})
}

// objectKey names c's object as the ledger keeps it.
func objectKey(c record.Change) string {
	return Object{APIVersion: c.APIVersion, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name, UID: c.UID}.key()
}

// key is the object's uid, else (a record without one) its type and
// name.
func (o Object) key() string {
	if o.UID != "" {
		return o.UID
	}
	return o.APIVersion + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name
}

// OwnerLabel names a GitOps owner in one short word, as metrics label
// it and as the drift command groups by: tool:Kind/namespace/name
// (argocd:Application/argocd/shop), tool:namespace/name for a Helm
// release (helm:shop/web).
func OwnerLabel(g record.GitOps) string {
	s := g.Tool + ":"
	if g.Kind != "" {
		s += g.Kind + "/"
	}
	if g.Namespace != "" {
		s += g.Namespace + "/"
	}
	return s + g.Name
}
