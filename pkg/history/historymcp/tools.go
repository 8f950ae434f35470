package historymcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/record"
)

type listInput struct {
	From      string `json:"from,omitempty" jsonschema:"start of the window: RFC 3339, or a length of time ago such as 2h or 7d (default: 1h ago)"`
	Until     string `json:"until,omitempty" jsonschema:"end of the window: RFC 3339, a length of time ago, or now (default: now)"`
	Namespace string `json:"namespace,omitempty" jsonschema:"only this namespace"`
	Type      string `json:"type,omitempty" jsonschema:"only this type, as kubectl names it: deploy, configmaps, certificates.cert-manager.io"`
	Name      string `json:"name,omitempty" jsonschema:"only objects of this name (with type)"`
	Manager   string `json:"manager,omitempty" jsonschema:"only changes by a field manager whose name contains this: kubectl, helm, argocd"`
	User      string `json:"user,omitempty" jsonschema:"only changes whose request this user sent, named exactly as the API server authenticated them: alice, system:serviceaccount:NAMESPACE:NAME"`
	Rule      string `json:"rule,omitempty" jsonschema:"only changes that matched this configured rule: a name or a glob, such as image-changed or rbac-*"`
	Severity  string `json:"severity,omitempty" jsonschema:"only changes whose rules' severity is at least this: info, warning, critical"`
	Release   string `json:"release,omitempty" jsonschema:"only changes of objects this release applied: a Helm release, Argo CD Application, Flux Kustomization or HelmRelease, by NAME or NAMESPACE/NAME"`
	Field     string `json:"field,omitempty" jsonschema:"only changes to a field whose path contains this: spec.replicas, image"`
	Drift     bool   `json:"drift,omitempty" jsonschema:"only changes made outside their object's GitOps owner (Argo CD, Flux, Helm), drift from what Git or the chart declares, and the writes that put them back"`
	Limit     int    `json:"limit,omitempty" jsonschema:"most records to read (default 50, at most 500)"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"next, from the previous page"`
	Cluster   string `json:"cluster,omitempty" jsonschema:"of a history store holding several clusters: the cluster to read (default: every cluster's changes together)"`
}

type listOutput struct {
	Changes []entry `json:"changes"`
	Next    string  `json:"next,omitempty" jsonschema:"pass as cursor for the next page; absent at the end"`
}

// entry is one change, or a controller's burst of them.
type entry struct {
	Time      string          `json:"time"`
	Type      string          `json:"type" jsonschema:"added, updated, deleted, event (what a Kubernetes Event said about the object), or burst"`
	Kind      string          `json:"kind"`
	Namespace string          `json:"namespace,omitempty"`
	Name      string          `json:"name"`
	By        string          `json:"by,omitempty" jsonschema:"the field manager that made the change"`
	User      string          `json:"user,omitempty" jsonschema:"the user whose request made the change, when an identity source said"`
	Fields    string          `json:"fields,omitempty" jsonschema:"the changed fields"`
	Rules     []string        `json:"rules,omitempty" jsonschema:"the configured rules the change matched"`
	Severity  string          `json:"severity,omitempty" jsonschema:"the highest severity of those rules: info, warning, critical"`
	Summary   string          `json:"summary,omitempty" jsonschema:"the most severe rule's summary of the change"`
	Access    []string        `json:"access,omitempty" jsonschema:"for a Role, ClusterRole or binding: what access the change gave or took away, in sentences, the most dangerous first"`
	Release   *record.Release `json:"release,omitempty" jsonschema:"the release or sync the object belongs to, as it stood when the change was made: tool (helm, argocd, flux), kind, namespace, name, Helm revision, status, chart, appVersion, gitRevision"`
	GitOps    *record.GitOps  `json:"gitops,omitempty" jsonschema:"how the change stands to the object's GitOps owner: via sync (the owner's write) or outside (drift), the owner (tool, kind, namespace, name), each drifted field with its declared value, value before and now, and for a write that put drift back the outside change it reverts and driftSeconds"`
	Event     string          `json:"event,omitempty" jsonschema:"for type event: what a Kubernetes Event said about the object, as Type Reason: message (×count)"`
	Burst     *burst          `json:"burst,omitempty"`
}

// burst sums up a controller's quick changes to the objects it owns.
type burst struct {
	Owner   string   `json:"owner" jsonschema:"the controller: Kind/name"`
	From    string   `json:"from"`
	Records int      `json:"records"`
	Objects int      `json:"objects"`
	Kinds   []string `json:"kinds"`
}

const (
	defaultLimit = 50
	maxLimit     = 500
	// burstGap is how far apart an owner's changes may be and still fold.
	burstGap = 30 * time.Second
)

func (t tools) listChanges(ctx context.Context, _ *mcp.CallToolRequest, in listInput) (*mcp.CallToolResult, listOutput, error) {
	t, err := t.in(ctx, in.Cluster)
	if err != nil {
		return nil, listOutput{}, err
	}
	q, err := t.query(ctx, in.From, in.Until, in.Namespace, in.Type, in.Name)
	if err != nil {
		return nil, listOutput{}, err
	}
	if err := historyapi.CheckRuleFilter(in.Rule, in.Severity); err != nil {
		return nil, listOutput{}, err
	}
	if err := historyapi.CheckReleaseFilter(in.Release); err != nil {
		return nil, listOutput{}, err
	}
	q.After, q.User, q.Rule, q.Severity, q.Release, q.Drift = in.Cursor, in.User, in.Rule, in.Severity, in.Release, in.Drift
	recs, next, err := t.read(ctx, q, limitOf(in.Limit), func(c record.Change) bool {
		return (in.Manager == "" || c.Manager != nil && strings.Contains(c.Manager.Name, in.Manager)) &&
			(in.Field == "" || strings.Contains(c.Changed, in.Field))
	})
	if err != nil {
		return nil, listOutput{}, err
	}
	return nil, listOutput{Changes: fold(recs), Next: next}, nil
}

// query builds a history query from a tool's common inputs.
func (t tools) query(ctx context.Context, from, until, namespace, typ, name string) (history.Query, error) {
	q := history.Query{Namespace: namespace}
	var err error
	if q.From, q.Until, err = t.window(from, until); err != nil {
		return q, err
	}
	if typ != "" {
		r, err := historyapi.ResolveType(ctx, t.src, typ)
		if err != nil {
			return q, err
		}
		q.Select = []history.Selector{{Group: r.GVR.Group, Resource: r.GVR.Resource, Name: name}}
	}
	return q, nil
}

func limitOf(n int) int {
	if n <= 0 {
		return defaultLimit
	}
	return min(n, maxLimit)
}

// read returns up to limit records of q that keep selects, and the
// cursor after the last one read.
func (t tools) read(ctx context.Context, q history.Query, limit int, keep func(record.Change) bool) ([]record.Change, string, error) {
	var out []record.Change
	read := 0
	for read < limit {
		q.Limit = limit - read
		page, err := t.src.Records(ctx, q)
		if err != nil {
			return nil, "", err
		}
		for _, raw := range page.Records {
			c, err := historyapi.DecodeRecord(raw)
			if err != nil {
				return nil, "", err
			}
			if keep(c) {
				out = append(out, c)
			}
		}
		read += len(page.Records)
		if q.After = page.Next; page.Next == "" {
			return out, "", nil
		}
	}
	return out, q.After, nil
}

// fold sums up each owner's runs of changes (a rollout's Pods and
// ReplicaSets) as one entry, as the text output folds them.
func fold(recs []record.Change) []entry {
	var out []entry
	open := map[string]int{} // owner → index of its entry in out
	objects := map[int]map[string]bool{}
	for _, c := range recs {
		if c.Owner != nil && c.Type != record.EventRecord && c.GitOps == nil { // drift stays its own entry
			key := c.Namespace + "/" + c.Owner.String()
			if i, ok := open[key]; ok && time.Time(c.Time).Sub(parseTime(out[i].Time)) <= burstGap {
				out[i] = joined(out[i], c)
				objects[i][c.Kind+"/"+c.Name] = true
				out[i].Burst.Objects = len(objects[i])
				continue
			}
			open[key] = len(out)
			objects[len(out)] = map[string]bool{c.Kind + "/" + c.Name: true}
		}
		out = append(out, single(c))
	}
	for i := range out {
		if b := out[i].Burst; b != nil && b.Records == 1 {
			out[i].Burst = nil // a lone change of an owned object
		}
	}
	return out
}

func single(c record.Change) entry {
	e := entry{Time: c.Time.String(), Type: c.Type, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name, Fields: c.Changed,
		Rules: c.Rules, Severity: c.Severity, Summary: c.Summary, Access: c.Access, Release: c.Release, GitOps: c.GitOps}
	if c.Manager != nil {
		e.By = c.Manager.Name
	}
	if c.User != nil {
		e.User = c.User.Name
	}
	if c.Event != nil {
		e.Event = c.Event.String()
		return e
	}
	if c.Owner != nil {
		e.Burst = &burst{Owner: c.Owner.String(), From: e.Time, Records: 1, Objects: 1, Kinds: []string{c.Kind}}
	}
	return e
}

// joined adds c to an owner's entry, which becomes a burst.
func joined(e entry, c record.Change) entry {
	b := e.Burst
	b.Records++
	if !slices.Contains(b.Kinds, c.Kind) {
		b.Kinds = append(b.Kinds, c.Kind)
	}
	e.Type, e.Time, e.Kind, e.Name = "burst", c.Time.String(), c.Owner.Kind, c.Owner.Name
	e.Fields = mergeFields(e.Fields, c.Changed)
	if e.By == "" && c.Manager != nil {
		e.By = c.Manager.Name
	}
	if e.User == "" && c.User != nil {
		e.User = c.User.Name
	}
	if e.Release == nil {
		e.Release = c.Release
	}
	for _, name := range c.Rules {
		if !slices.Contains(e.Rules, name) {
			e.Rules = append(e.Rules, name)
		}
	}
	if record.SeverityRank(c.Severity) > record.SeverityRank(e.Severity) {
		e.Severity, e.Summary = c.Severity, c.Summary
	}
	return e
}

func mergeFields(a, b string) string {
	fields := strings.Split(a, ", ")
	for _, f := range strings.Split(b, ", ") {
		if f != "" && !slices.Contains(fields, f) {
			fields = append(fields, f)
		}
	}
	return strings.Trim(strings.Join(fields, ", "), ", ")
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

type objectInput struct {
	Type      string `json:"type" jsonschema:"the object's type, as kubectl names it: deploy, configmaps, certificates.cert-manager.io"`
	Name      string `json:"name" jsonschema:"the object's name"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the object's namespace (for a namespaced type)"`
	Cluster   string `json:"cluster,omitempty" jsonschema:"of a history store holding several clusters: the object's cluster (needed there: an object is one cluster's)"`
}

type objectChangesInput struct {
	objectInput
	From   string `json:"from,omitempty" jsonschema:"start: RFC 3339, or a length of time ago such as 24h or 7d (default: 1h ago)"`
	Until  string `json:"until,omitempty" jsonschema:"end (default: now)"`
	User   string `json:"user,omitempty" jsonschema:"only changes whose request this user sent, named exactly as the API server authenticated them: alice, system:serviceaccount:NAMESPACE:NAME"`
	Events string `json:"events,omitempty" jsonschema:"the Kubernetes Events about the object and the objects it owns listed among its changes: all (default), warnings, none"`
	Limit  int    `json:"limit,omitempty" jsonschema:"most records (default 50, at most 500)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next, from the previous page"`
}

type objectChangesOutput struct {
	Changes []objectChange `json:"changes"`
	Next    string         `json:"next,omitempty"`
}

type objectChange struct {
	Time string `json:"time"`
	Type string `json:"type" jsonschema:"added, updated, deleted, or event: what a Kubernetes Event said"`
	// Object and Event are set for an event.
	Object string        `json:"object,omitempty" jsonschema:"for an event: the object it is about, Kind/name (the object itself, or one it owns)"`
	Event  *eventFact    `json:"event,omitempty"`
	By     string        `json:"by,omitempty" jsonschema:"the field manager that made the change"`
	User   string        `json:"user,omitempty" jsonschema:"the user whose request made the change, when an identity source said"`
	Fields []fieldChange `json:"fields,omitempty"`
	// Release is as list_changes names it.
	Release *record.Release `json:"release,omitempty" jsonschema:"the release or sync the object belongs to, as it stood when the change was made"`
}

// eventFact is what Kubernetes Events said about an object, folded per
// object and reason.
type eventFact struct {
	Type       string `json:"type" jsonschema:"Normal or Warning"`
	Reason     string `json:"reason"`
	Message    string `json:"message,omitempty"`
	Count      int    `json:"count"`
	First      string `json:"first"`
	Last       string `json:"last"`
	Controller string `json:"controller,omitempty" jsonschema:"the component that reported it"`
}

type fieldChange struct {
	Field string `json:"field"`
	Op    string `json:"op"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
}

func (t tools) objectChanges(ctx context.Context, _ *mcp.CallToolRequest, in objectChangesInput) (*mcp.CallToolResult, objectChangesOutput, error) {
	if in.Type == "" || in.Name == "" {
		return nil, objectChangesOutput{}, fmt.Errorf("type and name are needed")
	}
	t, err := t.in(ctx, in.Cluster)
	if err != nil {
		return nil, objectChangesOutput{}, err
	}
	q, err := t.query(ctx, in.From, in.Until, in.Namespace, in.Type, in.Name)
	if err != nil {
		return nil, objectChangesOutput{}, err
	}
	if err := historyapi.CheckEvents(in.Events); err != nil {
		return nil, objectChangesOutput{}, err
	}
	q.After, q.User, q.Events = in.Cursor, in.User, in.Events
	recs, next, err := t.read(ctx, q, limitOf(in.Limit), func(record.Change) bool { return true })
	if err != nil {
		return nil, objectChangesOutput{}, err
	}
	out := objectChangesOutput{Changes: []objectChange{}, Next: next}
	for _, c := range recs {
		oc := objectChange{Time: c.Time.String(), Type: c.Type, Release: c.Release}
		if e := c.Event; e != nil {
			oc.Object = c.Kind + "/" + c.Name
			oc.Event = &eventFact{Type: e.Type, Reason: e.Reason, Message: short(e.Message), Count: e.Count, First: e.First.String(),
				Last: e.Last.String(), Controller: e.ReportingController}
		}
		if c.Manager != nil {
			oc.By = c.Manager.Name
		}
		if c.User != nil {
			oc.User = c.User.Name
		}
		for _, fc := range c.Changes {
			oc.Fields = append(oc.Fields, fieldChange{Field: fc.Field, Op: fc.Op, From: short(fc.From), To: short(fc.To)})
		}
		out.Changes = append(out.Changes, oc)
	}
	return nil, out, nil
}

// maxValue is how much of a value a model is shown: the change, not a
// config file (object_at has it whole).
const maxValue = 300

func short(v any) string {
	if v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		b, _ := yaml.Marshal(v)
		s = strings.TrimSpace(string(b))
	}
	if r := []rune(s); len(r) > maxValue {
		return string(r[:maxValue]) + "…"
	}
	return s
}
