package rules

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"unicode"
	"unicode/utf8"
)

// MaxSummary is how many characters of a rule's summary a record keeps;
// what is beyond is cut, with a note saying how much ("… (cut: 1234
// characters more)"), so that no sink receives a summary it refuses.
const MaxSummary = 2000

// A summary's rendering is bounded as a rule's evaluation is: Go's
// text/template has neither a cost limit nor a context, and one summary
// printing the whole object for each key of a 250-key ConfigMap made
// 15.6 MB and held every record up 9.2 s. A rendering stops as soon as
// it goes over one of these, and the record gets a short fallback
// summary (see Set.summarize).
const (
	// summarySteps bounds the range iterations and template calls,
	// which cost time without writing anything.
	summarySteps = 10_000
	// summaryBytes bounds what is written and what the printing and
	// string functions return (kept in a variable or not): enough to
	// count what a cut summary leaves out.
	summaryBytes = 64 << 10
	// summaryRead bounds what contains searches.
	summaryRead = 16 << 20
)

// errSummaryLimit is a summary's rendering stopped at one of its limits.
var errSummaryLimit = errors.New("over its limit")

var (
	errSummarySteps = fmt.Errorf("%w of %d steps (range iterations and template calls)", errSummaryLimit, summarySteps)
	errSummaryBytes = fmt.Errorf("%w of %d bytes written or returned by functions", errSummaryLimit, summaryBytes)
	errSummaryRead  = fmt.Errorf("%w of %d bytes read by contains", errSummaryLimit, summaryRead)
)

// stepFunc is the function called at each range iteration and at each
// template's start (stepNode): its name cannot clash with one a summary
// may call.
const stepFunc = "_kubediffStep"

// stepNode is the action {{_kubediffStep}}, put into a summary's parse
// tree where it loops.
var stepNode = func() parse.Node {
	t := template.Must(template.New("step").Funcs(template.FuncMap{stepFunc: func() string { return "" }}).Parse("{{" + stepFunc + "}}"))
	return t.Root.Nodes[0]
}()

// summaryTemplate is a rule's compiled summary.
type summaryTemplate struct {
	base *template.Template
	// runs holds clones of base, each with its own budget, since the
	// rules are judged on many goroutines and a template's functions
	// are the same for all its executions.
	runs sync.Pool
}

// summaryRun is one clone of a summary and the budget its functions and
// output charge.
type summaryRun struct {
	t *template.Template
	b summaryBudget
}

// parseSummary parses a rule's summary and puts a step where it loops.
func parseSummary(name, text string) (*summaryTemplate, error) {
	t, err := template.New(name).Funcs(summaryFuncs(nil)).Option("missingkey=zero").Parse(text)
	if err != nil {
		return nil, err
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Root != nil {
			// A step at a template's start bounds a template calling itself.
			tt.Root.Nodes = append([]parse.Node{stepNode}, tt.Root.Nodes...)
			addSteps(tt.Root)
		}
	}
	return &summaryTemplate{base: t}, nil
}

// addSteps puts a step at the start of each range's body under n.
func addSteps(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			addSteps(c)
		}
	case *parse.RangeNode:
		addSteps(n.List)
		addSteps(n.ElseList)
		n.List.Nodes = append([]parse.Node{stepNode}, n.List.Nodes...)
	case *parse.IfNode:
		addSteps(n.List)
		addSteps(n.ElseList)
	case *parse.WithNode:
		addSteps(n.List)
		addSteps(n.ElseList)
	}
}

// render renders the summary on data: its text, trimmed and cut at
// MaxSummary characters, or errSummaryLimit or the template's error.
func (st *summaryTemplate) render(data any) (string, error) {
	run, _ := st.runs.Get().(*summaryRun)
	if run == nil {
		t, err := st.base.Clone()
		if err != nil {
			return "", err
		}
		run = &summaryRun{t: t}
		run.t.Funcs(summaryFuncs(&run.b))
	}
	defer st.runs.Put(run)
	run.b.reset()
	if err := run.t.Execute(&run.b, data); err != nil {
		return "", err
	}
	return run.b.text(), nil
}

// summaryBudget is what one rendering has left, and the writer keeping
// its text: leading space trimmed, the first MaxSummary characters kept,
// the rest counted.
type summaryBudget struct {
	steps, bytes, read int // left
	out                []byte
	kept               int // characters in out
	cut                int // characters after out
	trailing           int // of cut, the white space at the end
}

func (b *summaryBudget) reset() {
	*b = summaryBudget{steps: summarySteps, bytes: summaryBytes, read: summaryRead, out: b.out[:0]}
}

func (b *summaryBudget) step() (string, error) {
	if b.steps--; b.steps < 0 {
		return "", errSummarySteps
	}
	return "", nil
}

// produced charges s, returned by a function, and returns it.
func (b *summaryBudget) produced(s string) (string, error) {
	if b.bytes -= len(s); b.bytes < 0 {
		return "", errSummaryBytes
	}
	return s, nil
}

func (b *summaryBudget) Write(p []byte) (int, error) {
	if b.bytes -= len(p); b.bytes < 0 {
		return 0, errSummaryBytes
	}
	for rest := p; len(rest) > 0; {
		r, n := utf8.DecodeRune(rest)
		switch {
		case b.kept == 0 && unicode.IsSpace(r):
		case b.kept < MaxSummary:
			b.out = append(b.out, rest[:n]...)
			b.kept++
		case unicode.IsSpace(r):
			b.cut++
			b.trailing++
		default:
			b.cut++
			b.trailing = 0
		}
		rest = rest[n:]
	}
	return len(p), nil
}

// text is the summary as written, white space trimmed, with a note
// saying how much was cut.
func (b *summaryBudget) text() string {
	s := strings.TrimRightFunc(string(b.out), unicode.IsSpace)
	if more := b.cut - b.trailing; more > 0 {
		s += fmt.Sprintf("… (cut: %d characters more)", more)
	}
	return s
}

// summaryFuncs are the functions a summary may call besides the
// template package's own, and its printing functions, each charging b
// what it returns (b is nil when the template is parsed, never run).
func summaryFuncs(b *summaryBudget) template.FuncMap {
	charged := func(f func(...any) string) func(...any) (string, error) {
		return func(args ...any) (string, error) { return b.produced(f(args...)) }
	}
	return template.FuncMap{
		stepFunc:    func() (string, error) { return b.step() },
		"hasPrefix": strings.HasPrefix, "hasSuffix": strings.HasSuffix,
		"contains": func(s, sub string) (bool, error) {
			if b.read -= len(s); b.read < 0 {
				return false, errSummaryRead
			}
			return strings.Contains(s, sub), nil
		},
		"join":  func(s []string, sep string) (string, error) { return b.produced(strings.Join(s, sep)) },
		"upper": func(s string) (string, error) { return b.produced(strings.ToUpper(s)) },
		"lower": func(s string) (string, error) { return b.produced(strings.ToLower(s)) },
		"print": charged(fmt.Sprint), "println": charged(fmt.Sprintln),
		"printf": func(format string, args ...any) (string, error) { return b.produced(fmt.Sprintf(format, args...)) },
		"html":   charged(template.HTMLEscaper), "js": charged(template.JSEscaper), "urlquery": charged(template.URLQueryEscaper),
	}
}
