// Package otlp sends change records to an OpenTelemetry collector as OTLP
// log records (HTTP/protobuf or gRPC), through the OpenTelemetry Go SDK's logger
// and exporter. Each record is one log record: its JSON as the body, its
// fields as attributes named after the semantic conventions where they
// have a name (k8s.namespace.name, k8s.deployment.name, …) and under
// kubediff.* otherwise.
package otlp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

// maxBatch is how many records one export carries.
const maxBatch = 100

// Protocols.
const (
	HTTPProtobuf = "http/protobuf"
	GRPC         = "grpc"
)

// Options configure an OTLP sink.
type Options struct {
	// Endpoint is the collector's base URL (http://collector:4318); with
	// HTTP, logs go to its /v1/logs.
	Endpoint string
	// Protocol is HTTPProtobuf (the default) or GRPC.
	Protocol string
	Headers  map[string]string
	Timeout  time.Duration
	// Version is kubediff's, reported as the service version.
	Version string
}

// Sink exports records as OTLP log records.
type Sink struct {
	safeURL  string
	target   *url.URL // for taking what a collector echoes of it out of errors
	exporter exporter
	provider *sdklog.LoggerProvider
	logger   otellog.Logger
	capture  *capture

	mu sync.Mutex // one export at a time: capture holds the batch being built
}

// exporter is the OpenTelemetry SDK's OTLP log exporter, either protocol.
type exporter interface {
	Export(ctx context.Context, records []sdklog.Record) error
	Shutdown(ctx context.Context) error
}

// New returns an OTLP sink, or an error naming what is wrong.
func New(opts Options) (*Sink, error) {
	u, err := notify.ParseHTTPURL("endpoint", opts.Endpoint)
	if err != nil {
		return nil, err
	}
	target := *u
	var exp exporter
	switch opts.Protocol {
	case "", HTTPProtobuf:
		target.Path = strings.TrimSuffix(u.Path, "/") + "/v1/logs"
		exp, err = otlploghttp.New(context.Background(),
			otlploghttp.WithEndpointURL(target.String()),
			otlploghttp.WithHeaders(opts.Headers),
			otlploghttp.WithTimeout(opts.Timeout),
			// kubediff's queue retries, with its backoff, per sink.
			otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
	case GRPC:
		exp, err = otlploggrpc.New(context.Background(),
			otlploggrpc.WithEndpointURL(target.String()),
			otlploggrpc.WithHeaders(opts.Headers),
			otlploggrpc.WithTimeout(opts.Timeout),
			otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false}))
	default:
		return nil, fmt.Errorf("protocol: %q is not one of %s, %s", opts.Protocol, HTTPProtobuf, GRPC)
	}
	if err != nil {
		return nil, fmt.Errorf("endpoint: %s", scrub(err.Error()))
	}
	res := resource.NewSchemaless(semconv.ServiceName("kubediff"), semconv.ServiceVersion(opts.Version))
	c := &capture{}
	provider := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(c))
	return &Sink{safeURL: notify.SafeURL(&target), target: &target, exporter: exp, provider: provider,
		logger: provider.Logger("github.com/kubediff/kubediff"), capture: c}, nil
}

// MaxBatch implements notify.BatchNotifier.
func (s *Sink) MaxBatch() int { return maxBatch }

// Notify implements notify.Notifier.
func (s *Sink) Notify(ctx context.Context, c record.Change) error {
	return s.NotifyBatch(ctx, []record.Change{c})
}

// NotifyBatch exports records in one request.
func (s *Sink) NotifyBatch(ctx context.Context, cs []record.Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		r, err := logRecord(c)
		if err != nil {
			return err
		}
		s.logger.Emit(ctx, r)
	}
	return s.classify(s.exporter.Export(ctx, s.capture.take()))
}

// Close implements notify.Closer.
func (s *Sink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(s.provider.Shutdown(ctx), s.exporter.Shutdown(ctx))
}

// httpRefused matches the HTTP exporter's error for a 401 or 403, which
// carries the status only in its text ("failed to send logs to URL: 401
// Unauthorized (body: …)").
var httpRefused = regexp.MustCompile(`failed to send logs to \S+: 40[13] `)

// classify sorts the exporter's answers as the other sinks do: what OTLP
// calls retryable (HTTP 429, 502, 503, 504, which the HTTP exporter marks;
// gRPC Unavailable, ResourceExhausted, DeadlineExceeded, Aborted,
// OutOfRange, DataLoss) and network failures retry; a refused token (HTTP
// 401, 403; gRPC Unauthenticated, PermissionDenied) retries slowly until
// an operator fixes it; anything else is final. The collector's URL is
// scrubbed of credentials.
func (s *Sink) classify(err error) error {
	if err == nil {
		return nil
	}
	msg := fmt.Errorf("otlp %s: %s", s.safeURL, notify.RedactEcho(scrub(err.Error()), s.target))
	var ne net.Error
	if strings.Contains(err.Error(), "retry-able request failure") || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return notify.Transient(msg)
	}
	if httpRefused.MatchString(err.Error()) {
		return notify.AuthFailure(msg)
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.DataLoss:
		return notify.Transient(msg)
	case codes.Unauthenticated, codes.PermissionDenied:
		return notify.AuthFailure(msg)
	}
	return msg
}

// urlPattern finds URLs in an error's text.
var urlPattern = regexp.MustCompile(`https?://[^\s"']+`)

// scrub replaces each URL in s with its safe form (no user info, no query).
func scrub(s string) string {
	return urlPattern.ReplaceAllStringFunc(s, func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			return "(a URL)"
		}
		return notify.SafeURL(u)
	})
}

// logRecord turns a change record into an OTLP log record.
func logRecord(c record.Change) (otellog.Record, error) {
	var r otellog.Record
	body, err := json.Marshal(c)
	if err != nil {
		return r, err
	}
	r.SetEventName("kubediff.change")
	r.SetTimestamp(time.Time(c.Time))
	r.SetObservedTimestamp(time.Now())
	severity, text := logSeverity(c.Severity)
	r.SetSeverity(severity)
	r.SetSeverityText(text)
	r.SetBody(attribute.StringValue(string(body)))
	r.AddAttributes(Attributes(c)...)
	return r, nil
}

// logSeverity is the log record's severity: INFO, or for a record a
// warning rule matched WARN, for a critical one ERROR, so that a log
// stack's severity filters and colours show what the rules said.
func logSeverity(severity string) (otellog.Severity, string) {
	switch severity {
	case record.SeverityCritical:
		return otellog.SeverityError, "ERROR"
	case record.SeverityWarning:
		return otellog.SeverityWarn, "WARN"
	}
	return otellog.SeverityInfo, "INFO"
}

// semconvKinds are the kinds the semantic conventions name attributes
// for (k8s.deployment.name, k8s.pod.uid), by the name they use.
var semconvKinds = map[string]string{
	"Pod": "pod", "Deployment": "deployment", "ReplicaSet": "replicaset", "StatefulSet": "statefulset",
	"DaemonSet": "daemonset", "Job": "job", "CronJob": "cronjob", "Node": "node", "Namespace": "namespace",
}

// Attributes are a record's fields as log attributes.
func Attributes(c record.Change) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("kubediff.id", c.ID),
		attribute.String("kubediff.type", c.Type),
		attribute.String("k8s.object.api_version", c.APIVersion),
		attribute.String("k8s.object.kind", c.Kind),
		attribute.String("k8s.object.resource", c.Resource),
		attribute.String("k8s.object.name", c.Name),
		attribute.String("k8s.object.uid", c.UID),
		attribute.String("k8s.object.resource_version", c.ResourceVersion),
	}
	if c.Namespace != "" {
		attrs = append(attrs, attribute.String("k8s.namespace.name", c.Namespace))
	}
	if kind, ok := semconvKinds[c.Kind]; ok {
		attrs = append(attrs, attribute.String("k8s."+kind+".name", c.Name), attribute.String("k8s."+kind+".uid", c.UID))
	}
	if c.Changed != "" {
		attrs = append(attrs, attribute.String("kubediff.changed", c.Changed))
	}
	if c.Manager != nil {
		attrs = append(attrs, attribute.String("kubediff.manager", c.Manager.Name))
	}
	attrs = append(attrs, userAttributes(c.User)...)
	attrs = append(attrs, releaseAttributes(c.Release)...)
	attrs = append(attrs, gitopsAttributes(c.GitOps)...)
	if c.Owner != nil {
		attrs = append(attrs, attribute.String("kubediff.owner", c.Owner.String()))
	}
	if c.AfterGap {
		attrs = append(attrs, attribute.Bool("kubediff.after_gap", true))
	}
	if len(c.Rules) > 0 {
		attrs = append(attrs, attribute.String("kubediff.rules", strings.Join(c.Rules, ",")),
			attribute.String("kubediff.severity", c.Severity))
	}
	if c.Summary != "" {
		attrs = append(attrs, attribute.String("kubediff.summary", c.Summary))
	}
	return append(attrs, clusterAttributes(c.Cluster)...)
}

// userAttributes name who sent the request: the name the API server
// authenticated and its groups (comma-separated, as kubediff.changed:
// log stacks index scalars), and the semantic conventions' user
// agent and client address when the record has them.
func userAttributes(u *record.User) []attribute.KeyValue {
	if u == nil {
		return nil
	}
	attrs := []attribute.KeyValue{attribute.String("kubediff.user", u.Name)}
	if len(u.Groups) > 0 {
		attrs = append(attrs, attribute.String("kubediff.user.groups", strings.Join(u.Groups, ",")))
	}
	if u.UserAgent != "" {
		attrs = append(attrs, attribute.String("user_agent.original", u.UserAgent))
	}
	if u.SourceIP != "" {
		attrs = append(attrs, attribute.String("client.address", u.SourceIP))
	}
	return attrs
}

// releaseAttributes name the release the object belongs to
// (kubediff.release.*), as the record's release object does.
func releaseAttributes(r *record.Release) []attribute.KeyValue {
	if r == nil {
		return nil
	}
	attrs := []attribute.KeyValue{attribute.String("kubediff.release.tool", r.Tool), attribute.String("kubediff.release.name", r.Name)}
	for _, kv := range [][2]string{{"kind", r.Kind}, {"namespace", r.Namespace}, {"status", r.Status}, {"chart", r.Chart},
		{"app_version", r.AppVersion}, {"git_revision", r.GitRevision}} {
		if kv[1] != "" {
			attrs = append(attrs, attribute.String("kubediff.release."+kv[0], kv[1]))
		}
	}
	if r.Revision > 0 {
		attrs = append(attrs, attribute.Int("kubediff.release.revision", r.Revision))
	}
	return attrs
}

// gitopsAttributes say how a GitOps-owned object's change was made
// (docs/drift.md): kubediff.gitops.via (sync, outside), .owner ("Argo CD
// app shop"), the drifted fields (comma-separated, as kubediff.changed)
// and what a sync put back.
func gitopsAttributes(g *record.GitOps) []attribute.KeyValue {
	if g == nil {
		return nil
	}
	attrs := []attribute.KeyValue{attribute.String("kubediff.gitops.via", g.Via), attribute.String("kubediff.gitops.owner", g.Owner())}
	if len(g.Drift) > 0 {
		fields := make([]string, len(g.Drift))
		for i, f := range g.Drift {
			fields[i] = f.Field
		}
		attrs = append(attrs, attribute.String("kubediff.gitops.drift", strings.Join(fields, ",")))
	}
	if g.Reverts != "" {
		attrs = append(attrs, attribute.String("kubediff.gitops.reverts", g.Reverts), attribute.Float64("kubediff.gitops.drift_seconds", g.DriftSeconds))
	}
	return attrs
}

// clusterAttributes name the record's cluster as the semantic conventions
// do (k8s.cluster.name, k8s.cluster.uid).
func clusterAttributes(c *record.Cluster) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if c != nil && c.Name != "" {
		attrs = append(attrs, attribute.String("k8s.cluster.name", c.Name))
	}
	if c != nil && c.ID != "" {
		attrs = append(attrs, attribute.String("k8s.cluster.uid", c.ID))
	}
	return attrs
}

// capture is the logger's processor: it keeps what the logger emits so
// that NotifyBatch exports it itself and learns the outcome, which the
// SDK's processors would only hand to a global error handler.
type capture struct {
	mu      sync.Mutex
	records []sdklog.Record
}

func (c *capture) OnEmit(_ context.Context, r *sdklog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, r.Clone())
	return nil
}

func (c *capture) take() []sdklog.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.records
	c.records = nil
	return out
}

func (c *capture) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (c *capture) Shutdown(context.Context) error                         { return nil }
func (c *capture) ForceFlush(context.Context) error                       { return nil }
