// Package kafka produces each change record to a Kafka topic through
// franz-go: an idempotent producer with acks=all, keyed by the object's
// uid so that one object's records stay in order within a partition, with
// the record's id in a kubediff-id header for consumers to drop the
// duplicates a retry may write, and the record's JSON as the value.
package kafka

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

// IDHeader carries the record's id: the same record produced twice (a
// retry after a timeout whose write had landed, a restart, a new leader)
// carries the same id.
const IDHeader = "kubediff-id"

// maxBatch is how many records one NotifyBatch produces.
const maxBatch = 100

// Options configure a Kafka sink.
type Options struct {
	Brokers []string
	Topic   string
	// Compression is one of the Compression* names; empty means lz4.
	Compression string
	// Timeout bounds one produce; 0 means 10 s.
	Timeout time.Duration
	// TLS, when set, encrypts connections to the brokers.
	TLS *tls.Config
	// SASL, when set, authenticates to the brokers.
	SASL *SASL
	// Format is record (the default: the record's JSON as the value) or
	// cloudevents (a CloudEvents 1.0 structured-mode envelope, with
	// Source as its source and a content-type header).
	Format, Source string
	// Log receives the client's log at debug level; nil discards it.
	Log *slog.Logger
}

// SASL are the credentials a sink authenticates with.
type SASL struct {
	Mechanism, Username, Password string
}

// Sink produces records to one topic.
type Sink struct {
	client  *kgo.Client
	clog    *clientLog
	timeout time.Duration
	where   string // "kafka <brokers> topic <topic>", for errors
	sasl    bool
	format  string // FormatRecord or FormatCloudEvents
	source  string // the events' source, for cloudevents
}

// New returns a Kafka sink, or an error naming what is wrong with opts.
// It connects to no broker: the first produce does.
func New(opts Options) (*Sink, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = defaultTimeout
	}
	if opts.Source == "" {
		opts.Source = "kubediff"
	}
	for i, b := range opts.Brokers {
		// Never quoted: an address mistyped with credentials in it must
		// not reach an error or franz-go's log.
		if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
			return nil, fmt.Errorf("brokers[%d]: must be host:port", i)
		}
	}
	if len(opts.Brokers) == 0 {
		return nil, errors.New("brokers: empty")
	}
	codec, err := codecFor(opts.Compression)
	if err != nil {
		return nil, err
	}
	kopts := []kgo.Opt{
		kgo.SeedBrokers(opts.Brokers...),
		kgo.DefaultProduceTopic(opts.Topic),
		// Idempotent writes are franz-go's default and need acks=all;
		// saying both keeps them from being turned off by accident.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codec),
		// A record is given up on in franz-go after Timeout, and kubediff's
		// queue retries it with its backoff, so an outage costs one
		// log line rather than a goroutine per record blocked for ever.
		kgo.RecordDeliveryTimeout(opts.Timeout),
		// After a retriable produce error franz-go refreshes metadata
		// before it tries again, and it can only fail a timed-out record
		// at a try; refreshes are spaced by this age (5 s by default),
		// which would stretch every produce timeout below it.
		kgo.MetadataMinAge(min(opts.Timeout, 5*time.Second) / 2),
		// A missing topic may be created by an operator: keep trying
		// within the timeout rather than failing after 4 metadata loads.
		kgo.UnknownTopicRetries(-1),
		kgo.ClientID("kubediff"),
	}
	clog := &clientLog{log: opts.Log}
	kopts = append(kopts, kgo.WithLogger(clog), kgo.WithHooks(clog))
	if opts.TLS != nil {
		kopts = append(kopts, kgo.DialTLSConfig(opts.TLS))
	}
	if opts.SASL != nil {
		mech, err := mechanism(*opts.SASL)
		if err != nil {
			return nil, err
		}
		kopts = append(kopts, kgo.SASL(mech))
	}
	client, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return &Sink{client: client, clog: clog, timeout: opts.Timeout, sasl: opts.SASL != nil, format: opts.Format, source: opts.Source,
		where: fmt.Sprintf("kafka %s topic %s", strings.Join(opts.Brokers, ","), opts.Topic)}, nil
}

func codecFor(name string) (kgo.CompressionCodec, error) {
	switch name {
	case CompressionNone:
		return kgo.NoCompression(), nil
	case CompressionGzip:
		return kgo.GzipCompression(), nil
	case CompressionSnappy:
		return kgo.SnappyCompression(), nil
	case "", CompressionLZ4:
		return kgo.Lz4Compression(), nil
	case CompressionZstd:
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression: %q is not one of %s", name, strings.Join(compressions, ", "))
}

func mechanism(s SASL) (sasl.Mechanism, error) {
	switch s.Mechanism {
	case SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil
	case SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism(), nil
	case SASLScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl.mechanism: %q is not one of %s", s.Mechanism, strings.Join(mechanisms, ", "))
}

// MaxBatch implements notify.BatchNotifier.
func (s *Sink) MaxBatch() int { return maxBatch }

// Notify implements notify.Notifier.
func (s *Sink) Notify(ctx context.Context, c record.Change) error {
	return s.NotifyBatch(ctx, []record.Change{c})
}

// NotifyBatch produces records and waits until the brokers have them all
// (acks=all). When any fails, the batch fails and the queue retries it
// whole: franz-go fails every record after a failed one in the same
// partition, so what was written of an object's records is a prefix of
// them, and a consumer dropping repeated ids sees each once, in order.
func (s *Sink) NotifyBatch(ctx context.Context, cs []record.Change) error {
	recs := make([]*kgo.Record, 0, len(cs))
	for _, c := range cs {
		r, err := kafkaRecord(c, s.format, s.source)
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var errs []error
	for _, res := range s.client.ProduceSync(ctx, recs...) {
		if res.Err != nil {
			errs = append(errs, res.Err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	err := worst(errs)
	if cerr := s.clog.failureSince(start); cerr != nil && timedOut(err) {
		err = cerr // why it timed out
	}
	return s.classify(err, len(errs), len(recs))
}

// Close implements notify.Closer: it ends the client's connections once
// the queue is done with the sink.
func (s *Sink) Close() error {
	s.client.Close()
	return nil
}

// kafkaRecord is c as Kafka has it, in the sink's format.
func kafkaRecord(c record.Change, format, source string) (*kgo.Record, error) {
	var v any = c
	headers := []kgo.RecordHeader{{Key: IDHeader, Value: []byte(c.ID)}}
	if format == FormatCloudEvents {
		v = record.NewCloudEvent(c, source)
		headers = append(headers, kgo.RecordHeader{Key: "content-type", Value: []byte(record.CloudEventContentType)})
	}
	value, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	key := c.UID
	if key == "" { // not expected from a watch; keep one object on one partition anyway
		key = c.Kind + "/" + c.ObjectName()
	}
	// No Timestamp: franz-go stamps the record when it is produced and
	// measures the delivery timeout from it, so the change's own time
	// (often seconds old after a retry) would expire it at once. The
	// value carries the change's time.
	return &kgo.Record{
		Key:     []byte(key),
		Value:   value,
		Headers: headers,
	}, nil
}

// worst picks the error that decides the batch's fate: a refusal of
// credentials before a transient failure before a record the broker
// rejects, so that a batch is dropped only when nothing else went wrong.
func worst(errs []error) error {
	rank := func(err error) int {
		switch {
		case authFailure(err):
			return 0
		case !recordRejected(err):
			return 1
		}
		return 2
	}
	best := errs[0]
	for _, err := range errs[1:] {
		if rank(err) < rank(best) {
			best = err
		}
	}
	return best
}

// classify sorts a produce error for the queue: refused credentials are
// kept and retried slowly until an operator fixes them; a record the
// broker refuses as such (too large, invalid) is final; everything else
// (brokers down, leaders moving, timeouts, a topic not yet created) is
// transient, since losing records is worse than retrying them.
func (s *Sink) classify(err error, failed, total int) error {
	msg := fmt.Errorf("%s: %d of %d records not produced: %w", s.where, failed, total, s.explain(err))
	switch {
	case authFailure(err):
		return notify.AuthFailure(msg)
	case recordRejected(err):
		return msg
	}
	return notify.Transient(msg)
}

// explain replaces franz-go's guess for a connection closed at once by
// the broker (SASL missing) when SASL is configured: then the broker has
// most likely refused the credentials.
func (s *Sink) explain(err error) error {
	var eof *kgo.ErrFirstReadEOF
	switch {
	case s.sasl && errors.As(err, &eof):
		return errors.New("the broker closed the connection during authentication: check sasl.mechanism, sasl.username and the password, and tls")
	case timedOut(err):
		// franz-go does not say why: the brokers' answers are in its
		// log, which debug level shows.
		return fmt.Errorf("not acknowledged by the brokers within timeout %s (debug logs show their answers): %w", s.timeout, err)
	}
	return err
}

func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrRecordTimeout)
}

// authFailure reports whether err is the broker refusing kubediff's
// credentials or access, or closing the connection at once, which
// brokers do to a client whose SASL or TLS they do not accept.
func authFailure(err error) bool {
	var eof *kgo.ErrFirstReadEOF
	if errors.As(err, &eof) || errors.Is(err, errSASLClosed) {
		return true
	}
	for _, e := range []*kerr.Error{kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism, kerr.IllegalSaslState,
		kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// recordRejected reports whether the broker refused the record itself,
// which no retry changes.
func recordRejected(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return false
	}
	for _, e := range []*kerr.Error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord,
		kerr.CorruptMessage, kerr.InvalidTimestamp} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// clientLog is franz-go's logger. It hands franz-go's log to kubediff's
// at debug level, and only when that is on: the queue already logs an
// outage once when it starts and once when it ends, and franz-go's debug
// lines say, for whoever turns debug on, what happened in between (each
// broker's answer to each produce). It also keeps the last connection
// failure franz-go reports as an error (a SASL login refused, TLS
// refused): franz-go retries those quietly until the produce times out,
// and the timeout alone would not say that the credentials are wrong.
type clientLog struct {
	log *slog.Logger // nil: none

	mu      sync.Mutex
	failure error
	at      time.Time
}

func (l *clientLog) Level() kgo.LogLevel {
	if l.log != nil && l.log.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelDebug
	}
	return kgo.LogLevelError
}

func (l *clientLog) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if level == kgo.LogLevelError && strings.HasPrefix(msg, "unable to") {
		for i := 0; i+1 < len(keyvals); i += 2 {
			if err, ok := keyvals[i+1].(error); ok && keyvals[i] == "err" {
				l.failed(fmt.Errorf("%s: %w", msg, err))
			}
		}
	}
	if l.log != nil {
		l.log.Debug("kafka client: "+msg, keyvals...)
	}
}

// errSASLClosed stands for a broker closing the connection in the middle
// of the SASL exchange, which brokers (and kfake) do when the password is
// wrong, and which franz-go takes for a lost connection and retries.
var errSASLClosed = errors.New("the broker closed the connection during SASL authentication: check sasl.mechanism, sasl.username and the password")

// OnBrokerRead implements kgo.HookBrokerRead: a failed read of a SASL
// answer is the broker refusing the login.
func (l *clientLog) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil && (key == int16(kmsg.SASLAuthenticate) || key == int16(kmsg.SASLHandshake)) {
		l.failed(errSASLClosed)
	}
}

func (l *clientLog) failed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failure, l.at = err, time.Now()
}

// failureSince returns the last connection failure since t, if any.
func (l *clientLog) failureSince(t time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failure != nil && !l.at.Before(t) {
		return l.failure
	}
	return nil
}
