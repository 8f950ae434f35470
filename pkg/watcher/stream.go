package watcher

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubediff/kubediff/pkg/discovery"
)

// Watch requests are encoded as the dynamic client encodes them.
var (
	parameterScheme = runtime.NewScheme()
	parameterCodec  = runtime.NewParameterCodec(parameterScheme)
	versionV1       = schema.GroupVersion{Version: "v1"}
)

func init() { metav1.AddToGroupVersion(parameterScheme, versionV1) }

// listWatch lists a target with the dynamic client and watches it with a
// decoder of kubediff's own.
//
// Why not the dynamic client's watch: client-go decodes each watch event
// in five passes (a framing scan, the kind sniffed twice, the event
// envelope, then the object) and the cache form costs a sixth. That was
// half of kubediff's CPU per update. The API server writes a JSON watch
// stream one event per line, so a line is read and decoded once, straight
// into the cache form.
type listWatch struct {
	target  discovery.Target
	dynamic dynamic.Interface
	rest    rest.Interface
	toCache func(u *unstructured.Unstructured, keepDecoded bool) (*compactObject, error)
	logErr  func(error)
	health  *apiHealth
	// keep, for a cluster-wide target filtered to namespaces, says which
	// objects to keep (nil: all).
	keep func(namespace string) bool
	// batching is Options.ReadBatching.
	batching time.Duration
	// received counts the objects of the initial list as they come (a
	// streamed list's events, a paged list's pages), and expected how many
	// there are (-1: not known yet); both only for progress while syncing.
	received, expected atomic.Int64
}

func (lw *listWatch) listerWatcher() *cache.ListWatch {
	return &cache.ListWatch{ListWithContextFunc: lw.list, WatchFuncWithContext: lw.watch}
}

func (lw *listWatch) selectors(o *metav1.ListOptions) {
	o.LabelSelector, o.FieldSelector = lw.target.LabelSelector, lw.target.FieldSelector
}

func (lw *listWatch) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	var list *unstructured.UnstructuredList
	err := lw.retry(ctx, func() (err error) {
		list, err = lw.listOnce(ctx, opts)
		return err
	})
	if err != nil {
		lw.logErr(err)
		return nil, err
	}
	if opts.Continue == "" {
		lw.received.Store(0) // a list from the start: what an earlier attempt counted is gone
	}
	if lw.keep != nil {
		list.Items = slices.DeleteFunc(list.Items, func(u unstructured.Unstructured) bool { return !lw.keep(u.GetNamespace()) })
	}
	lw.received.Add(int64(len(list.Items)))
	if n := list.GetRemainingItemCount(); n != nil {
		lw.expected.Store(lw.received.Load() + *n)
	}
	return list, nil
}

// listOnce is one list request for the target, with its selectors.
func (lw *listWatch) listOnce(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	lw.selectors(&opts)
	return lw.dynamic.Resource(lw.target.Resource.GVR).Namespace(lw.target.Namespace).List(ctx, opts)
}

// count asks the server how many objects the target has, for progress
// while its first list comes in: a list of one object says how many
// remain. Unknown when the server does not say (it does not count
// through label selectors).
func (lw *listWatch) count(ctx context.Context) {
	if lw.keep != nil {
		return // the server would count other namespaces' objects too
	}
	list, err := lw.listOnce(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return
	}
	if n := list.GetRemainingItemCount(); n != nil {
		lw.expected.CompareAndSwap(-1, int64(len(list.Items))+*n)
	} else if list.GetContinue() == "" {
		lw.expected.CompareAndSwap(-1, int64(len(list.Items)))
	}
}

// requestRetries is how often a list, or a watch that fails to start, is
// tried again a second apart while the server answers probes (a dropped
// connection, a timeout), as client-go's Request.Watch does, before the
// reflector is told and backs off. While the server does not answer,
// requests wait for it (health.go) and do not count.
const requestRetries = 10

// retry runs request until it succeeds, fails for a reason other than the
// connection, or has failed requestRetries times while the server
// answered.
//
// The health of the API server follows the target: a request that failed
// for the connection, or waited for the server, interrupts it until one
// goes through, so that the end of an outage is reported once every
// target has resumed.
func (lw *listWatch) retry(ctx context.Context, request func() error) error {
	key := lw.target.Key()
	for attempt := 1; ; attempt++ {
		waited, err := lw.health.await(ctx, key)
		if err != nil {
			return err
		}
		if waited {
			attempt = 1 // an outage is no fault of this request
		}
		err = request()
		if err == nil {
			lw.health.resume(key)
			return nil
		}
		if !isConnectionError(err) {
			return err
		}
		lw.health.interrupt(key)
		if attempt > requestRetries {
			return err
		}
		lw.health.suspect(ctx)
		if lw.health.connected() {
			if _, answered := err.(apierrors.APIStatus); answered {
				return err // a 503 for this type alone (an aggregated API down): the reflector backs off
			}
			select { // the server answers, yet this failed: pace the retries
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
}

func (lw *listWatch) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw.selectors(&opts)
	opts.Watch = true
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		lw.received.Store(0) // a streamed list from the start
	}
	body, err := lw.stream(ctx, &opts)
	if err != nil {
		// A server without streaming lists refuses sendInitialEvents; the
		// reflector then falls back to a list, which is not worth a warning.
		if opts.SendInitialEvents == nil || !(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)) {
			lw.logErr(err)
		}
		return nil, err
	}
	key := lw.target.Key()
	d := &eventDecoder{body: body, toCache: lw.toCache, logErr: lw.logErr, connectionLost: lw.connectionLost, failed: func() { lw.health.interrupt(key) },
		added: &lw.received, batch: readBatch{window: lw.batching}, keep: lw.keep}
	return watch.NewStreamWatcher(d, apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")), nil
}

// connectionLost is told by the target's watch that its connection broke.
func (lw *listWatch) connectionLost() { lw.health.watchBroke(lw.target.Key()) }

func (lw *listWatch) stream(ctx context.Context, opts *metav1.ListOptions) (io.ReadCloser, error) {
	var body io.ReadCloser
	err := lw.retry(ctx, func() (err error) {
		body, err = lw.rest.Get().AbsPath(lw.path()...).SpecificallyVersionedParams(opts, parameterCodec, versionV1).Stream(ctx)
		return err
	})
	return body, err
}

// path is the target's collection URL, as the dynamic client builds it.
func (lw *listWatch) path() []string {
	gvr := lw.target.Resource.GVR
	p := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		p = []string{"/api", gvr.Version}
	}
	if lw.target.Namespace != "" {
		p = append(p, "namespaces", lw.target.Namespace)
	}
	return append(p, gvr.Resource)
}

// maxKeptLine is the largest buffer kept for assembling long lines.
const maxKeptLine = 1 << 20

// eventDecoder reads a JSON watch stream, one event per line.
type eventDecoder struct {
	body io.ReadCloser
	// lines is the read buffer, taken from lineReaders while events come
	// and given back while the watch waits on a quiet stream (nil).
	lines *bufio.Reader
	// wake holds the first bytes that end a quiet wait (wakeRead);
	// woken hands them to lines before the rest of the body.
	wake    [wakeReadSize]byte
	woken   wokenBody
	ended   bool   // the watch ended: no more events
	long    []byte // a line longer than the reader's buffer, assembled
	toCache func(u *unstructured.Unstructured, keepDecoded bool) (*compactObject, error)
	logErr  func(error)
	// connectionLost tells the probe of the API server that the watch
	// ended for the connection; failed, that the server ended it with an
	// error (the reflector lists again, or retries).
	connectionLost, failed func()
	added                  *atomic.Int64 // counts ADDED events (nil: not counted)
	keep                   func(namespace string) bool
	wire                   wireDecoder
	batch                  readBatch
}

// wireEvent is a watch event as the API server writes it.
type wireEvent struct {
	Type   watch.EventType
	Object map[string]any
}

// Decode implements watch.Decoder. Objects come out in the cache form;
// errors as the Status the server sent, which the reflector turns into an
// API error (an expired resourceVersion makes it list again).
func (d *eventDecoder) Decode() (watch.EventType, runtime.Object, error) {
	typ, obj, err := d.decode()
	if err != nil {
		d.release() // the stream watcher calls no more after an error
	}
	return typ, obj, err
}

// lineReaders lends watches their read buffers. A watch holds one only
// while its events come: most of a cluster's watches are quiet for
// minutes, and 1,000 types each holding a 32 KB buffer were 31 MB, over
// half of an idle kubediff's live heap (go run ./hack/bench -types
// 1000). A quiet watch waits with its 512-byte wake buffer instead.
var lineReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, lineBufferSize) }}

// lineBufferSize holds most events whole; longer ones are assembled
// (readLine).
const lineBufferSize = 32 << 10

// wakeReadSize is the buffer a quiet watch waits with.
const wakeReadSize = 512

// release gives the read buffer back, once the watch has ended.
func (d *eventDecoder) release() {
	d.putLines()
	d.ended = true
}

// putLines gives the read buffer back to lineReaders.
func (d *eventDecoder) putLines() {
	if d.lines != nil && d.lines.Size() == lineBufferSize {
		d.lines.Reset(nil)
		lineReaders.Put(d.lines)
	}
	d.lines = nil
}

func (d *eventDecoder) decode() (watch.EventType, runtime.Object, error) {
	if d.ended {
		return "", nil, io.EOF
	}
	line, err := d.readLine()
	if err != nil {
		if !errors.Is(err, io.EOF) && isConnectionError(err) {
			// The connection broke (a partition, a server killed): the
			// watch ends as if closed, the probe is told, and the
			// reflector's next watch waits for the server and resumes
			// where this one stopped, without an error per type.
			d.connectionLost()
			return "", nil, io.EOF
		}
		return "", nil, err
	}
	var ev wireEvent
	var typ string
	typ, ev.Object, err = d.wire.event(line)
	ev.Type = watch.EventType(typ)
	if cap(d.long) > maxKeptLine {
		d.long = nil // one huge object is no reason to keep its size
	}
	if err != nil {
		err = fmt.Errorf("decode watch event: %w", err)
		d.logErr(err)
		return "", nil, err
	}
	if ev.Object == nil {
		err = fmt.Errorf("decode watch event: %q event without an object", ev.Type)
		d.logErr(err)
		return "", nil, err
	}
	u := &unstructured.Unstructured{Object: ev.Object}
	if ev.Type != watch.Added {
		d.batch.start()
	}
	d.batch.event()
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		return d.objectEvent(ev.Type, u)
	case watch.Bookmark:
		return ev.Type, &compactObject{ResourceVersion: u.GetResourceVersion(), annotations: u.GetAnnotations()}, nil
	case watch.Error:
		if d.failed != nil {
			d.failed()
		}
		// An expired or (after a server restart) too new resourceVersion
		// only makes the reflector list again.
		if err := apierrors.FromObject(u); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) && !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
			d.logErr(err)
		}
		return ev.Type, u, nil
	}
	err = fmt.Errorf("decode watch event: unknown type %q", ev.Type)
	d.logErr(err)
	return "", nil, err
}

// objectEvent returns an object's event in the cache form.
func (d *eventDecoder) objectEvent(typ watch.EventType, u *unstructured.Unstructured) (watch.EventType, runtime.Object, error) {
	if d.keep != nil && !d.keep(u.GetNamespace()) {
		// Outside the target's namespaces: only its resourceVersion
		// counts, so that the watch resumes after it.
		return watch.Bookmark, &compactObject{ResourceVersion: u.GetResourceVersion()}, nil
	}
	if typ == watch.Added && d.added != nil {
		d.added.Add(1)
	}
	// Only an update's new state is diffed straight away; keeping the
	// decoded form of the rest would undo the compact cache.
	c, err := d.toCache(u, typ == watch.Modified)
	return typ, c, err
}

// readLine returns the next non-empty line, without its newline. The
// slice is valid until the next call. A line cut short by the end of the
// stream is io.ErrUnexpectedEOF: the server always ends an event with a
// newline.
func (d *eventDecoder) readLine() ([]byte, error) {
	if d.lines == nil || d.lines.Buffered() == 0 {
		done := d.batch.waitingRead()
		// Only a busy watch, whose next events come within the batching
		// window, keeps its read buffer while it waits.
		if !d.batch.busy || d.lines == nil {
			if err := d.wakeRead(); err != nil {
				return nil, err
			}
		}
		defer func() { done(d.lines) }()
	}
	for {
		line, err := d.lines.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			d.long = append(d.long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = d.lines.ReadSlice('\n')
				d.long = append(d.long, line...)
			}
			line = d.long
		}
		line = bytes.TrimSpace(line)
		switch {
		case err == nil && len(line) > 0:
			return line, nil
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		}
	}
}

// wakeRead waits for a quiet stream's next bytes without a read buffer:
// it gives the buffer back, reads into the small wake buffer, and takes a
// buffer again for those bytes and the rest.
func (d *eventDecoder) wakeRead() error {
	d.putLines()
	d.long = nil
	n, err := d.body.Read(d.wake[:])
	for n == 0 && err == nil {
		n, err = d.body.Read(d.wake[:])
	}
	if n == 0 {
		return err
	}
	d.woken = wokenBody{pending: d.wake[:n], err: err, body: d.body}
	d.lines = lineReaders.Get().(*bufio.Reader)
	d.lines.Reset(&d.woken)
	return nil
}

// wokenBody reads the bytes a wake read got, then the body.
type wokenBody struct {
	pending []byte
	err     error // the wake read's error, after its bytes
	body    io.Reader
}

func (w *wokenBody) Read(p []byte) (int, error) {
	if len(w.pending) > 0 {
		n := copy(p, w.pending)
		w.pending = w.pending[n:]
		return n, nil
	}
	if w.err != nil {
		return 0, w.err
	}
	return w.body.Read(p)
}

// Close implements watch.Decoder.
func (d *eventDecoder) Close() { d.body.Close() }
