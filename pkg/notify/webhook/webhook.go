// Package webhook POSTs each change record to an HTTP endpoint, as the same
// JSON object stdout prints or as a CloudEvents 1.0 envelope, optionally
// signed with HMAC-SHA256; or, with a chat preset (teams, discord,
// mattermost, googlechat), as a readable message to a chat service's
// incoming webhook, rendered by a shipped template within the service's
// limits.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

// Formats of the request body.
const (
	FormatRecord      = "record"
	FormatCloudEvents = "cloudevents"
)

// SignatureHeader carries "sha256=<hex HMAC of the body>" when a secret is set.
const SignatureHeader = "X-Kubediff-Signature-256"

// Options configure a webhook sink.
type Options struct {
	URL     string
	Headers map[string]string
	// Secret, when set, signs each body (HMAC-SHA256) in SignatureHeader.
	Secret []byte
	// Format is record (default), cloudevents, or a chat preset.
	Format string
	// Timeout bounds one request; 0 means 10 s.
	Timeout time.Duration
	// InsecureSkipVerify turns TLS verification off (the caller logs it).
	InsecureSkipVerify bool
	// Source is the CloudEvents source attribute.
	Source string
	// Body is the template of format template.
	Body BodyTemplate
}

// Sink posts records to one URL.
type Sink struct {
	opts     Options
	client   *http.Client
	safeURL  string // for errors and logs: no credentials, no query
	endpoint *url.URL
	// preset renders chat messages; nil for record and cloudevents.
	preset  *preset
	limiter *rate.Limiter // with a preset: the service's rate
}

// New returns a webhook sink, or an error naming what is wrong with opts.
func New(opts Options) (*Sink, error) {
	u, err := notify.ParseHTTPURL("url", opts.URL)
	if err != nil {
		return nil, err
	}
	if opts.Format == "" {
		opts.Format = FormatRecord
	}
	if !slices.Contains(Formats, opts.Format) {
		return nil, fmt.Errorf("format: %q is not one of %s", opts.Format, strings.Join(Formats, ", "))
	}
	p, err := newPreset(opts.Format)
	if opts.Format == FormatTemplate {
		p, err = newTemplatePreset(opts.Body)
	}
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = defaultTimeout
	}
	if opts.Source == "" {
		opts.Source = "kubediff"
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if opts.InsecureSkipVerify {
		transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // opted into per sink, logged
	}
	s := &Sink{
		opts:   opts,
		preset: p,
		client: &http.Client{Transport: transport, Timeout: opts.Timeout,
			// A redirect would turn the POST into a bodiless GET that
			// "succeeds", and carry the headers to another host.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		safeURL:  notify.SafeURL(u),
		endpoint: u,
	}
	if p != nil {
		s.limiter = rate.NewLimiter(rate.Every(p.interval), 1)
	}
	return s, nil
}

// Notify implements notify.Notifier.
func (s *Sink) Notify(ctx context.Context, c record.Change) error {
	if s.preset != nil {
		return s.postSections(ctx, []Section{recordSection(c)}, c.ID)
	}
	body, contentType, err := s.encode(c)
	if err != nil {
		return err
	}
	return s.post(ctx, body, contentType, c.ID)
}

// post sends one body. key is its Idempotency-Key.
func (s *Sink) post(ctx context.Context, body []byte, contentType, key string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", s.safeURL, err)
	}
	for k, v := range s.opts.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", contentType)
	// The same record retried, re-sent after a restart or by a new leader
	// carries the same key (draft-ietf-httpapi-idempotency-key-header).
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("User-Agent", "kubediff")
	if len(s.opts.Secret) > 0 {
		mac := hmac.New(sha256.New, s.opts.Secret)
		mac.Write(body)
		req.Header.Set(SignatureHeader, "sha256="+hex.EncodeToString(mac.Sum(nil)))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// *url.Error quotes the full URL; name it safely instead.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return notify.Transient(fmt.Errorf("webhook %s: %w", s.safeURL, err))
	}
	defer resp.Body.Close()
	reason, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return classify(resp, s.safeURL, []byte(notify.RedactEcho(string(reason), s.endpoint)))
}

// classify turns an HTTP answer into nil, a transient error (5xx, 429,
// 408), refused credentials (401, 403, 407: an expired or revoked token
// that an operator replaces) or a final error (other 4xx: the record is
// at fault), with the receiver's reason.
func classify(resp *http.Response, safeURL string, reason []byte) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return fmt.Errorf("webhook %s answered %s: redirects are not followed; configure the final URL", safeURL, resp.Status)
	}
	err := fmt.Errorf("webhook %s answered %s: %s", safeURL, resp.Status, strings.TrimSpace(string(reason)))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		wait := retryAfter(resp.Header.Get("Retry-After"))
		if wait == 0 {
			wait = retryAfterField(reason)
		}
		return notify.RetryAfter(err, wait)
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusRequestTimeout:
		return notify.Transient(err)
	case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden,
		resp.StatusCode == http.StatusProxyAuthRequired:
		return notify.AuthFailure(err)
	}
	return err
}

// retryAfter parses Retry-After as seconds (Discord's may have a
// fraction) or an HTTP date; 0 when absent or unreadable, which means
// "use the backoff".
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 && secs < 1e9 { // not NaN, nor an overflow
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// retryAfterField reads the wait from a 429 answer's JSON body, as
// Discord writes it ({"retry_after": 0.35}, seconds), for a proxy that
// dropped the header; 0 when there is none.
func retryAfterField(body []byte) time.Duration {
	var v struct {
		RetryAfter float64 `json:"retry_after"`
	}
	if json.Unmarshal(body, &v) != nil || v.RetryAfter <= 0 {
		return 0
	}
	return time.Duration(v.RetryAfter * float64(time.Second))
}

func (s *Sink) encode(c record.Change) ([]byte, string, error) {
	var v any = c
	contentType := "application/json"
	if s.opts.Format == FormatCloudEvents {
		v = record.NewCloudEvent(c, s.opts.Source)
		contentType = record.CloudEventContentType
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, "", fmt.Errorf("encode record: %w", err)
	}
	return body, contentType, nil
}
