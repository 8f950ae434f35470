// Package slack posts change records to a Slack channel with
// chat.postMessage and Block Kit, batching bursts into one message and
// posting at most once per second per channel.
package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

// Options configure a Slack sink.
type Options struct {
	Token   string
	Channel string
	// APIURL overrides https://slack.com/api/ (Enterprise proxies, tests).
	APIURL string
	// Interval is the least time between two messages; 0 means 1 s, which
	// is Slack's limit for posting to one channel.
	Interval time.Duration
}

// Sink posts to one channel.
type Sink struct {
	client  *slack.Client
	channel string
	limiter *rate.Limiter
}

// New returns a Slack sink, or an error naming what is missing.
func New(opts Options) (*Sink, error) {
	if opts.Token == "" {
		return nil, errors.New("token: empty (set token or tokenFile)")
	}
	if opts.Channel == "" {
		return nil, errors.New("channel: empty")
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	var clientOpts []slack.Option
	if opts.APIURL != "" {
		if _, err := notify.ParseHTTPURL("apiURL", opts.APIURL); err != nil {
			return nil, err
		}
		base := opts.APIURL
		if !strings.HasSuffix(base, "/") {
			base += "/"
		}
		clientOpts = append(clientOpts, slack.OptionAPIURL(base))
	}
	return &Sink{
		client:  slack.New(opts.Token, clientOpts...),
		channel: opts.Channel,
		limiter: rate.NewLimiter(rate.Every(opts.Interval), 1),
	}, nil
}

// MaxBatch implements notify.BatchNotifier.
func (s *Sink) MaxBatch() int { return maxBatch }

// Notify implements notify.Notifier.
func (s *Sink) Notify(ctx context.Context, c record.Change) error {
	return s.NotifyBatch(ctx, []record.Change{c})
}

// NotifyBatch posts records as one message, or as several when one
// would be over Slack's limits on a message's blocks. A failure after
// the first of several retries them all: the channel may show a record
// twice, never lose one.
func (s *Sink) NotifyBatch(ctx context.Context, cs []record.Change) error {
	if len(cs) == 1 {
		blocks, fallback := Blocks(cs)
		return s.post(ctx, blocks, fallback)
	}
	sections := make([]section, len(cs))
	for i, c := range cs {
		sections[i] = recordSection(c)
	}
	return s.postSections(ctx, sections)
}

// postSections posts sections in as few messages as Slack's limits allow.
func (s *Sink) postSections(ctx context.Context, sections []section) error {
	for _, m := range split(sections) {
		if err := s.post(ctx, m.blocks, m.fallback); err != nil {
			return err
		}
	}
	return nil
}

// post posts one message, at most once per Interval.
func (s *Sink) post(ctx context.Context, blocks []slack.Block, fallback string) error {
	if err := s.limiter.Wait(ctx); err != nil {
		return notify.Transient(err)
	}
	_, _, err := s.client.PostMessageContext(ctx, s.channel,
		slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(fallback, false))
	return classify(err)
}

// authErrors are Slack's answers for a token or an app it refuses, or a
// bot removed from the channel (https://api.slack.com/methods/chat.postMessage#errors):
// an operator's to fix, after which the records held meanwhile post.
var authErrors = map[string]bool{
	"not_authed": true, "invalid_auth": true, "account_inactive": true, "token_revoked": true,
	"token_expired": true, "no_permission": true, "missing_scope": true, "not_allowed_token_type": true,
	"access_denied": true, "ekm_access_denied": true, "team_access_not_granted": true,
	"org_login_required": true, "not_in_channel": true,
}

// classify sorts Slack's answers: rate limits wait as told, server and
// network failures retry, a refused token (invalid_auth, token_revoked,
// a proxy's 401 or 403) retries slowly until an operator fixes it, and
// anything else (channel_not_found, msg_too_long) is final. A transport
// error quotes the request URL, which may carry credentials (an apiURL
// with user info or a query): only its cause is kept.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return notify.RetryAfter(fmt.Errorf("slack: %w", err), rl.RetryAfter)
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && authErrors[se.Err] {
		return notify.AuthFailure(fmt.Errorf("slack: %w", err))
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && (sc.Code == http.StatusUnauthorized || sc.Code == http.StatusForbidden) {
		return notify.AuthFailure(fmt.Errorf("slack: %w", err))
	}
	if errors.As(err, &sc) && sc.Code >= 500 {
		return notify.Transient(fmt.Errorf("slack: %w", err))
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return notify.Transient(fmt.Errorf("slack: %w", err))
	}
	return fmt.Errorf("slack: %w", err)
}

// Blocks renders records as Block Kit blocks within Slack's limits on
// each block, and a plain-text fallback for notifications; NotifyBatch
// splits many records' blocks into messages within a message's limits.
func Blocks(cs []record.Change) ([]slack.Block, string) {
	if len(cs) == 1 {
		header := slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, fit(title(cs[0]), maxHeaderText, plain, unitsLen), false, false))
		blocks, fallback := message([]section{{text: sectionText(cs[0], false), title: title(cs[0])}})
		return append([]slack.Block{header}, blocks...), fallback
	}
	var sections []section
	for _, c := range cs {
		sections = append(sections, recordSection(c))
	}
	return message(sections)
}

// section is one part of a message: its text, and its title for the
// notification's plain-text fallback.
type section struct{ text, title string }

func recordSection(c record.Change) section {
	return section{text: sectionText(c, true), title: title(c)}
}

// message lays sections out one after the other, divided, with their
// titles, each cut, as the notification's text.
func message(sections []section) ([]slack.Block, string) {
	var blocks []slack.Block
	var titles []string
	for i, sec := range sections {
		if i > 0 {
			blocks = append(blocks, slack.NewDividerBlock())
		}
		blocks = append(blocks, sectionBlock(sec.text))
		titles = append(titles, fit(sec.title, maxFallback, plain, unitsLen))
	}
	return blocks, fit(strings.Join(titles, "; "), maxMessageText, plain, unitsLen)
}

func sectionBlock(text string) *slack.SectionBlock {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
}

// title names the record, after what the rules said of it when they
// matched: "[warning: image-changed] updated Deployment shop/web".
func title(c record.Change) string {
	if c.Type == record.EventRecord && c.Event != nil {
		return fmt.Sprintf("%s %s %s: %s", strings.ToLower(c.Event.Type), c.Kind, c.ObjectName(), c.Event.Reason)
	}
	t := fmt.Sprintf("%s %s %s", c.Type, c.Kind, c.ObjectName())
	if j := c.Judgement(); j != "" {
		t = "[" + j + "] " + t
	}
	return t
}

// sectionText lists a record's sentences of access and changed fields,
// one per line, cut to fit a section with a note of how many were left
// out. Each part of its head has a share of the section (cut with a
// note past it), so that a summary or a name thousands of characters
// long never makes Slack refuse the record.
func sectionText(c record.Change, withTitle bool) string {
	var head []string
	if withTitle {
		head = append(head, "*"+mrkdwn(title(c), maxTitle)+"*")
	}
	meta := []string{"`" + mrkdwn(c.APIVersion, maxName) + "`"}
	switch {
	case c.User != nil && c.Manager != nil:
		meta = append(meta, "by *"+mrkdwn(c.User.String(), maxName)+"* ("+mrkdwn(c.Manager.Name, maxName)+")")
	case c.User != nil:
		meta = append(meta, "by *"+mrkdwn(c.User.String(), maxName)+"*")
	case c.Manager != nil:
		meta = append(meta, "by *"+mrkdwn(c.Manager.Name, maxName)+"*")
	}
	if c.Release != nil {
		meta = append(meta, "("+mrkdwn(c.Release.String(), maxName)+")")
	}
	meta = append(meta, c.Circumstances()...)
	if c.GitOps != nil {
		meta = append(meta, "— "+mrkdwn(c.GitOps.String(), maxName))
	}
	head = append(head, strings.Join(meta, " "))
	if c.Summary != "" {
		head = append(head, "_"+mrkdwn(c.Summary, maxSummary)+"_")
	}
	if c.Event != nil {
		head = append(head, mrkdwn(eventText(c), maxEvent))
	}
	text := strings.Join(head, "\n")
	// What access an RBAC change gave or took away comes first: it is
	// what a reviewer reads the record for.
	var lines []string
	for _, sentence := range c.Access {
		lines = append(lines, "\n» "+mrkdwn(sentence, maxAccess))
	}
	for _, fc := range record.CondenseConditions(c.Changes) {
		lines = append(lines, "\n• "+changeLine(fc))
	}
	for i, line := range lines {
		more := fmt.Sprintf("\n… and %d more changes", len(lines)-i)
		if len(text)+len(line)+len(more) > maxSectionText {
			return text + more
		}
		text += line
	}
	return text
}

// eventText is what an Event said: "⚠ FailedCreate: Error creating: … (×3)
// by replicaset-controller".
func eventText(c record.Change) string {
	e := c.Event
	text := e.String()[len(e.Type)+1:]
	if e.Warning() {
		text = "⚠ " + text
	}
	if e.ReportingController != "" {
		text += " by " + e.ReportingController
	}
	return text
}

func changeLine(fc record.FieldChange) string {
	field := "`" + escape(fc.Field) + "`"
	cut := ""
	if fc.Truncated {
		cut = " (cut from " + fc.Sizes() + ")"
	}
	switch {
	case fc.Op == record.OpAdd:
		return field + " added: " + value(fc.To) + cut
	case fc.Op == record.OpRemove:
		return field + " removed (was " + value(fc.From) + ")" + cut
	case fc.Lines != nil:
		return changedLines(field, fc)
	}
	return field + ": " + value(fc.From) + " → " + value(fc.To) + cut
}

// maxCodeBlock bounds the changed lines one field shows, so that one
// rewritten file leaves room in the section for the other changes.
const maxCodeBlock = 1500

// changedLines shows a replaced multi-line string as its line counts and
// its hunks in a code block, as many lines as fit in maxCodeBlock.
func changedLines(field string, fc record.FieldChange) string {
	head := fmt.Sprintf("%s: %d lines → %d lines", field, fc.Lines.FromLines, fc.Lines.ToLines)
	if fc.Truncated {
		head += " (" + fc.Sizes() + ")"
	}
	var lines []string
	size := 0
	more := fc.Lines.Truncated
	add := func(line string) bool {
		// A code block ends at the first ```: none may be inside.
		line = escape(truncate(strings.ReplaceAll(line, "```", "'''"), 200))
		if size+len(line)+1 > maxCodeBlock {
			more = true
			return false
		}
		size += len(line) + 1
		lines = append(lines, line)
		return true
	}
hunks:
	for _, h := range fc.Lines.Hunks {
		if !add(h.Header()) {
			break
		}
		for _, line := range h.Lines {
			if !add(line) {
				break hunks
			}
		}
	}
	if more {
		lines = append(lines, "… more changed lines not shown")
	}
	return head + "\n```" + strings.Join(lines, "\n") + "```"
}

// value shows a field's value in code style, short enough for a list line.
func value(v any) string {
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	return "`" + escape(truncate(strings.ReplaceAll(s, "`", "'"), 200)) + "`"
}

// mrkdwn is s escaped, cut with a note past max bytes.
func mrkdwn(s string, max int) string { return fit(s, max, escape, bytesLen) }

// escape applies Slack's mrkdwn escaping.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
