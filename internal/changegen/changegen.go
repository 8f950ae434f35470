// Package changegen makes streams of realistic object updates and the
// records kubediff's differ makes of them, for the benchmarks of what
// keeps them (the history, the state store). Sizes on disk depend on
// what is kept, so the objects look like real ones: a ConfigMap holding
// a config file of its own (a service name, a random token, tunables)
// in which one line changes per update, and a Deployment whose replicas
// or image change. The records come from the real differ, through the
// cache transform, as the watcher hands them to the history.
package changegen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/journal"
)

// Types of the streams' objects, as discovery names them.
var (
	ConfigMaps  = discovery.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, Singular: "configmap", ShortNames: []string{"cm"}}
	Deployments = discovery.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true, Singular: "deployment", ShortNames: []string{"deploy"}}
)

// Namespaces the objects are spread over.
const Namespaces = 10

// Stream updates n objects of one type in turn.
type Stream struct {
	resource discovery.Resource
	differ   *diff.Differ
	cache    func(any) (any, error)
	objects  []*unstructured.Unstructured // each object's newest state, in cache form
	versions []int
	change   func(u *unstructured.Unstructured, i, version int)
	now      time.Time
	next     int
	rv       int
}

// Update is one change: the history's entry (the record and the states
// around it) and the stored state the watcher notes with it.
type Update struct {
	Entry journal.Entry
	// Key is the object's key in the state store (namespace/name).
	Key string
	// UID, ResourceVersion and Raw are the state store's Object.
	UID, ResourceVersion string
	Raw                  []byte
}

// NewConfigMaps is a stream of n ConfigMaps, each holding a ~1.7 KB
// config file; each update changes one line of it.
func NewConfigMaps(n int) (*Stream, error) {
	return newStream(ConfigMaps, n, configMap, changeConfigLine)
}

// NewDeployments is a stream of n Deployments; each update changes the
// replicas or the image (generation and observedGeneration follow).
func NewDeployments(n int) (*Stream, error) {
	return newStream(Deployments, n, deployment, changeReplicasOrImage)
}

func newStream(r discovery.Resource, n int, build func(i int, rng *rand.Rand) map[string]any, change func(*unstructured.Unstructured, int, int)) (*Stream, error) {
	s := &Stream{resource: r, change: change, versions: make([]int, n)}
	d, err := diff.New(diff.Options{
		Rules:         diff.Rules{Defaults: diff.AllDefaults},
		Redact:        diff.RedactOptions{Salt: []byte("changegen")},
		CachedObjects: true,
		Now:           func() time.Time { return s.now },
	})
	if err != nil {
		return nil, err
	}
	s.differ, s.cache = d, d.CacheTransform(r)
	rng := rand.New(rand.NewPCG(uint64(n), 1)) // the same objects in every run
	for i := range n {
		u := &unstructured.Unstructured{Object: build(i, rng)}
		if _, err := s.cache(u); err != nil {
			return nil, err
		}
		s.objects = append(s.objects, u)
	}
	return s, nil
}

// Resource is the type of the stream's objects.
func (s *Stream) Resource() discovery.Resource { return s.resource }

// Len is how many objects the stream updates.
func (s *Stream) Len() int { return len(s.objects) }

// Next updates the next object in turn at the time given.
func (s *Stream) Next(at time.Time) (Update, error) {
	i := s.next
	s.next = (s.next + 1) % len(s.objects)
	return s.Object(i, at)
}

// Object updates object i at the time given.
func (s *Stream) Object(i int, at time.Time) (Update, error) {
	old := s.objects[i]
	u := old.DeepCopy()
	s.versions[i]++
	s.rv++
	s.change(u, i, s.versions[i])
	u.SetResourceVersion(fmt.Sprint(1000 + s.rv))
	setManagedTime(u, at)
	if _, err := s.cache(u); err != nil {
		return Update{}, err
	}
	s.now = at
	c, ok := s.differ.Diff(change.Event{Type: change.Updated, Resource: s.resource, Old: old, New: u})
	if !ok {
		return Update{}, fmt.Errorf("changegen: no record for %s version %d", u.GetName(), s.versions[i])
	}
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return Update{}, err
	}
	s.objects[i] = u
	return Update{
		Entry: journal.Entry{Change: c, Resource: s.resource, Old: old, New: u},
		Key:   u.GetNamespace() + "/" + u.GetName(), UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion(), Raw: raw,
	}, nil
}

// ID is object i's id in the history.
func (s *Stream) ID(i int) change.ObjectID {
	u := s.objects[i]
	return change.NewObjectID(s.resource.GVR.Group, s.resource.GVR.Resource, u.GetNamespace(), u.GetName())
}

// RecordJSON is the size of the record as kept: the JSON line watch -o
// json prints.
func RecordJSON(e journal.Entry) int {
	b, _ := json.Marshal(e.Change)
	return len(b)
}

// StateJSON is the size of the state after the record as JSON.
func StateJSON(e journal.Entry) int {
	if e.New == nil {
		return 0
	}
	b, _ := e.New.MarshalJSON()
	return len(b)
}

func metadata(kind string, i int, rng *rand.Rand) map[string]any {
	return map[string]any{
		"name":              fmt.Sprintf("%s-%d", kind, i),
		"namespace":         fmt.Sprintf("team-%d", i%Namespaces),
		"uid":               fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff),
		"resourceVersion":   "1000",
		"creationTimestamp": "2026-11-20T08:00:00Z",
		"labels":            map[string]any{"app.kubernetes.io/name": fmt.Sprintf("svc-%d", i), "app.kubernetes.io/part-of": "shop", "team": fmt.Sprintf("team-%d", i%Namespaces)},
		"managedFields": []any{
			map[string]any{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1", "time": "2026-11-20T08:00:00Z", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}}}}},
		},
	}
}

// setManagedTime stamps the writer's managedFields entry, as the API
// server does on each update.
func setManagedTime(u *unstructured.Unstructured, at time.Time) {
	fields, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
	if len(fields) == 0 {
		return
	}
	fields[0].(map[string]any)["time"] = at.UTC().Format(time.RFC3339)
	_ = unstructured.SetNestedSlice(u.Object, fields, "metadata", "managedFields")
}

// tunables are the config file's lines that updates change, in turn.
const tunables = 16

func configMap(i int, rng *rand.Rand) map[string]any {
	values := make([]int, tunables)
	for j := range values {
		values[j] = 10 + j
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": metadata("config", i, rng),
		"data":     map[string]any{"app.conf": configFile(i, fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()), values)},
	}
}

// configFile is a service's config file: ~1.7 KB, 77 lines.
func configFile(i int, token string, values []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# svc-%d configuration, rendered by the platform pipeline\n# do not edit by hand: changes are overwritten on the next deploy\n\n", i)
	fmt.Fprintf(&b, "[server]\nlisten = 0.0.0.0:8080\nendpoint = https://svc-%d.team-%d.example.internal:8443/api/v2\nread_timeout = 30s\nwrite_timeout = 30s\n\n", i, i%Namespaces)
	fmt.Fprintf(&b, "[auth]\nissuer = https://auth.example.internal/realms/shop\nclient_id = svc-%d\nclient_token = %s\n\n", i, token)
	fmt.Fprintf(&b, "[database]\nhost = pg-%d.db.example.internal\nport = 5432\nname = svc_%d\npool_min = 2\n\n", i%7, i)
	b.WriteString("[tuning]\n")
	for j, v := range values {
		fmt.Fprintf(&b, "%s = %d\n", tunableNames[j], v)
	}
	fmt.Fprintf(&b, "\n[logging]\nlevel = info\nformat = json\noutput = stdout\nsample_initial = 100\nsample_thereafter = 10\nfields = service,team,request_id,trace_id,span_id\n")
	fmt.Fprintf(&b, "\n[cache]\nbackend = redis\naddress = redis-%d.cache.example.internal:6379\nkey_prefix = svc-%d:\nmax_entries = 50000\neviction = lru\n", i%5, i)
	fmt.Fprintf(&b, "\n[upstreams]\ncatalog = http://catalog.shop.svc.cluster.local:8080\npricing = http://pricing.shop.svc.cluster.local:8080\ninventory = http://inventory.shop.svc.cluster.local:8080\n")
	b.WriteString("\n[tracing]\nenabled = true\nexporter = otlp\nendpoint = http://otel-collector.observability.svc.cluster.local:4317\nsample_ratio = 0.05\npropagators = tracecontext,baggage\n")
	b.WriteString("\n[metrics]\nlisten = 0.0.0.0:9090\npath = /metrics\nhistogram_buckets = 0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10\n")
	b.WriteString("\n[features]\n")
	for _, f := range []string{"checkout_v2", "new_search", "recommendations", "gift_cards", "express_shipping", "loyalty_points"} {
		fmt.Fprintf(&b, "%s = %v\n", f, len(f)%2 == 0)
	}
	return b.String()
}

var tunableNames = [tunables]string{
	"worker_threads", "queue_depth", "batch_size", "cache_ttl_seconds", "retry_limit", "retry_backoff_ms",
	"max_connections", "idle_timeout_seconds", "rate_limit_per_second", "burst_limit", "log_sample_percent",
	"metrics_interval_seconds", "gc_interval_seconds", "shard_count", "prefetch_count", "circuit_breaker_threshold",
}

// changeConfigLine changes the next tunable's value: one line of the file.
func changeConfigLine(u *unstructured.Unstructured, _, version int) {
	file, _, _ := unstructured.NestedString(u.Object, "data", "app.conf")
	lines := strings.Split(file, "\n")
	for n, line := range lines {
		name, _, ok := strings.Cut(line, " = ")
		if ok && name == tunableNames[version%tunables] {
			lines[n] = fmt.Sprintf("%s = %d", name, 100+version)
		}
	}
	_ = unstructured.SetNestedField(u.Object, strings.Join(lines, "\n"), "data", "app.conf")
}
