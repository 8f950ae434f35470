package kafka_test

// No Kafka broker can run on the machines kubediff is built on (no JVM),
// so these tests speak the Kafka protocol to franz-go's kfake: a Kafka
// cluster in the test's process, listening on 127.0.0.1, which handles
// produce, fetch, idempotent producer ids and SASL as brokers do.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/kafka"
	"github.com/kubediff/kubediff/pkg/notify/notifytest"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
)

const topic = "kubediff-changes"

var fast = notify.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}

// newCluster starts a kfake cluster of three brokers holding the topic
// in three partitions, so that records of different objects spread.
func newCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3), kfake.SeedTopics(3, topic)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// buildSink decodes a sink the way a config file does: defaults, then
// the keys set, validated and built.
func buildSink(t *testing.T, c *kfake.Cluster, set func(*kafka.Config)) notify.Notifier {
	t.Helper()
	cfg := kafka.Type.NewConfig().(*kafka.Config)
	cfg.Brokers, cfg.Topic = c.ListenAddrs(), topic
	if set != nil {
		set(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sink, err := cfg.Build(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if closer, ok := sink.(notify.Closer); ok {
		t.Cleanup(func() { _ = closer.Close() })
	}
	return sink
}

// change is record i of one of three objects.
func change(i int) record.Change {
	obj := i % 3
	return record.Change{ID: fmt.Sprintf("id-%d", i), Type: record.Updated, APIVersion: "v1", Kind: "ConfigMap",
		Resource: "configmaps", Namespace: "ns", Name: fmt.Sprintf("cm-%d", obj), UID: fmt.Sprintf("uid-%d", obj),
		ResourceVersion: fmt.Sprint(100 + i), Changed: "data.k", Time: record.Timestamp(time.Unix(1700000000, 0).UTC())}
}

func changes(from, to int) []record.Change {
	var out []record.Change
	for i := from; i < to; i++ {
		out = append(out, change(i))
	}
	return out
}

// consume reads the topic from the start until it holds n records.
func consume(t *testing.T, c *kfake.Cluster, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records within 30 s", len(got), n)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			t.Fatalf("consume: %v", errs)
		}
		got = append(got, fetches.Records()...)
	}
	return got
}

// checkDelivered asserts that records hold want, each object's in order,
// and that a consumer dropping repeated ids sees each record once: what
// kubediff promises a topic's readers.
func checkDelivered(t *testing.T, recs []*kgo.Record, want []record.Change) {
	t.Helper()
	seen := map[string]bool{}
	perObject := map[string][]string{}
	partition := map[string]int32{}
	for _, r := range recs {
		id := header(r, kafka.IDHeader)
		if seen[id] {
			continue
		}
		seen[id] = true
		var c record.Change
		if err := json.Unmarshal(r.Value, &c); err != nil {
			t.Fatalf("value is not a record: %v: %s", err, r.Value)
		}
		if c.ID != id || c.UID != string(r.Key) {
			t.Fatalf("record %s: header id %q, key %q; want the record's id and uid", c.ID, id, r.Key)
		}
		if p, ok := partition[c.UID]; ok && p != r.Partition {
			t.Fatalf("object %s in partitions %d and %d", c.UID, p, r.Partition)
		}
		partition[c.UID] = r.Partition
		perObject[c.UID] = append(perObject[c.UID], c.ID)
	}
	wantPerObject := map[string][]string{}
	for _, c := range want {
		wantPerObject[c.UID] = append(wantPerObject[c.UID], c.ID)
	}
	for uid, ids := range wantPerObject {
		if !slices.Equal(perObject[uid], ids) {
			t.Errorf("object %s: got %v, want %v", uid, perObject[uid], ids)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d distinct records, want %d", len(seen), len(want))
	}
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestRecordsDeliveredWithKeyHeaderAndValue(t *testing.T) {
	for _, compression := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(compression, func(t *testing.T) {
			c := newCluster(t)
			sink := buildSink(t, c, func(cfg *kafka.Config) { cfg.Compression = compression })
			want := changes(0, 30)
			q := notifytest.Deliver(t, sink, want, fast, nil)
			if s := q.Stats(); s.Delivered != 30 || s.Failed != 0 {
				t.Fatalf("stats %+v, want 30 delivered", s)
			}
			got := consume(t, c, 30)
			checkDelivered(t, got, want)
			var first record.Change
			if err := json.Unmarshal(got[0].Value, &first); err != nil {
				t.Fatal(err)
			}
			orig := change(mustAtoi(t, strings.TrimPrefix(first.ID, "id-")))
			if first.Kind != orig.Kind || first.Name != orig.Name || first.ResourceVersion != orig.ResourceVersion ||
				!time.Time(first.Time).Equal(time.Time(orig.Time)) {
				t.Fatalf("value %s does not hold record %+v", got[0].Value, orig)
			}
		})
	}
}

// With format: cloudevents, each value is a CloudEvents 1.0 envelope
// around the record, said so in a header; key and id header as ever.
func TestCloudEventsFormat(t *testing.T) {
	c := newCluster(t)
	sink := buildSink(t, c, func(cfg *kafka.Config) { cfg.Format, cfg.Source = "cloudevents", "kubediff/prod" })
	want := changes(0, 6)
	notifytest.Deliver(t, sink, want, fast, nil)
	got := consume(t, c, 6)
	for _, r := range got {
		var ev record.CloudEvent
		if err := json.Unmarshal(r.Value, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.SpecVersion != "1.0" || ev.ID != header(r, kafka.IDHeader) || ev.Source != "kubediff/prod" ||
			ev.Type != "io.kubediff.object.updated" || ev.Data.UID != string(r.Key) || ev.Subject != "ConfigMap/ns/"+ev.Data.Name {
			t.Errorf("event %s (key %s)", r.Value, r.Key)
		}
		if ct := header(r, "content-type"); ct != "application/cloudevents+json" {
			t.Errorf("content-type header %q", ct)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// refuseWrites makes the cluster answer every produce with
// NOT_ENOUGH_REPLICAS (a retriable error, as a broker short of in-sync
// replicas for acks=all answers) until heal is called; it returns how
// many produce requests it refused.
func refuseWrites(c *kfake.Cluster) (refused func() int64, heal func()) {
	var n atomic.Int64
	var healed atomic.Bool
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if healed.Load() {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		n.Add(1)
		preq := req.(*kmsg.ProduceRequest)
		resp := preq.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range preq.Topics {
			st := kmsg.ProduceResponseTopic{Topic: rt.Topic, TopicID: rt.TopicID}
			for _, rp := range rt.Partitions {
				st.Partitions = append(st.Partitions, kmsg.ProduceResponseTopicPartition{
					Partition: rp.Partition, ErrorCode: kerr.NotEnoughReplicas.Code, BaseOffset: -1, LogStartOffset: -1})
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return n.Load, func() { healed.Store(true) }
}

// TestBrokersRefusingWritesForAWhile: records wait in the queue while the
// brokers refuse writes, and arrive all, each object's in order, once the
// brokers take them; the outage is one line when it starts and one when
// it ends.
func TestBrokersRefusingWritesForAWhile(t *testing.T) {
	c := newCluster(t)
	refused, heal := refuseWrites(c)
	sink := buildSink(t, c, func(cfg *kafka.Config) { cfg.Timeout = time.Second })
	var logs syncBuffer
	q := notify.NewQueue("kafka", sink, notify.QueueOptions{Size: 100, Backoff: fast, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	done := make(chan struct{})
	go func() { q.Run(context.Background()); close(done) }()
	want := changes(0, 40)
	for _, ch := range want {
		q.Enqueue(ch)
	}
	eventually(t, func() bool { return q.Stats().Retries >= 3 && refused() >= 3 })
	heal()
	q.Close()
	<-done
	if s := q.Stats(); s.Delivered != 40 || s.Failed != 0 || s.Dropped != 0 {
		t.Fatalf("stats %+v, want all 40 delivered", s)
	}
	checkDelivered(t, consume(t, c, 40), want)
	out := logs.String()
	if strings.Count(out, "sink failing") != 1 || strings.Count(out, "sink delivering again") != 1 || strings.Count(out, "\n") != 2 {
		t.Fatalf("want one line when the outage starts and one when it ends:\n%s", out)
	}
	if !strings.Contains(out, "not acknowledged by the brokers within timeout 1s") {
		t.Fatalf("the failing line does not say why:\n%s", out)
	}
}

// TestSpooledRecordsSurviveAnOutageAndARestart: with a state dir, records
// the brokers refused until kubediff stopped are produced by the next
// start, before new ones, each object's in order.
func TestSpooledRecordsSurviveAnOutageAndARestart(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	refused, heal := refuseWrites(c)

	st, spool := openSpool(t, dir)
	q := notify.NewSpooledQueue("kafka", buildSink(t, c, func(cfg *kafka.Config) { cfg.Timeout = time.Second }),
		spool, notify.QueueOptions{MaxBytes: 1 << 20, Backoff: fast, Log: slog.New(slog.DiscardHandler)})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	for _, ch := range changes(0, 20) {
		q.Enqueue(ch)
	}
	eventually(t, func() bool { return refused() >= 2 })
	q.Close()
	stop() // the drain at shutdown times out while the brokers refuse
	<-done
	if s := q.Stats(); s.Waiting != 20 || s.Delivered != 0 || s.Dropped != 0 {
		t.Fatalf("after the stop: %+v; want 20 waiting in the state dir", s)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	heal()
	_, spool = openSpool(t, dir)
	q = notify.NewSpooledQueue("kafka", buildSink(t, c, nil), spool,
		notify.QueueOptions{MaxBytes: 1 << 20, Backoff: fast, Log: slog.New(slog.DiscardHandler)})
	for _, ch := range changes(20, 30) {
		q.Enqueue(ch)
	}
	q.Close()
	q.Run(context.Background())
	if s := q.Stats(); s.Delivered != 30 || s.Waiting != 0 {
		t.Fatalf("after the restart: %+v; want all 30 delivered", s)
	}
	checkDelivered(t, consume(t, c, 30), changes(0, 30))
}

func openSpool(t *testing.T, dir string) (*state.Store, *state.Spool) {
	t.Helper()
	st, err := state.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() }) // a second Close does nothing
	spool, err := st.Spool("kafka")
	if err != nil {
		t.Fatal(err)
	}
	return st, spool
}

func eventually(t *testing.T, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("condition not met within 30 s")
		}
	}
}

// syncBuffer is a log destination the queue's goroutine writes while the
// test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
