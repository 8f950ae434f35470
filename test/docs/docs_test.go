// Package docs checks the README and the pages under docs/: the README
// stays a page for users, and no link leads nowhere.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

const root = "../.."

// maxReadmeLines keeps the README what a user reads before trying
// kubediff: what it is, how to install and use it, and links. Reference
// belongs in docs/.
const maxReadmeLines = 220

func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move reference into a page under docs/ and link it", n, maxReadmeLines)
	}
}

// Every relative link in the README and in docs/*.md points to a file or
// directory that exists and, with a #fragment, to a heading that exists
// (as GitHub names its anchors).
func TestRelativeLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		for _, target := range links(string(data)) {
			if err := resolve(page, target); err != nil {
				t.Errorf("%s: link (%s): %v", name, target, err)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Errorf("checked only %d links: is the link pattern still right?", checked)
	}
}

func TestLinkAndAnchorRules(t *testing.T) {
	md := "# Title\n\n## The state dir's size\n\n### With Helm (`charts/kubediff`)\n\n" +
		"```\n## not a heading\n[not](a-link.md)\n```\n\n## Title\n\n" +
		"See [a](b.md#c) and `[code](not-a-link.md)`, ![img](i.png \"t\") and [x](https://e.com).\n"
	if got, want := fmt.Sprint(anchors(md)), "map[the-state-dirs-size:true title:true title-1:true with-helm-chartskubediff:true]"; got != want {
		t.Errorf("anchors = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(links(md)), "[b.md#c i.png]"; got != want {
		t.Errorf("links = %s, want %s", got, want)
	}
}

var (
	fence    = regexp.MustCompile("(?ms)^ *(```|~~~).*?^ *(```|~~~)[^\n]*$")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// [text](target) and ![alt](target "title"); text may hold code, not brackets.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	refLink = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	heading = regexp.MustCompile(`(?m)^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	scheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// links returns the relative link targets in a Markdown page, leaving out
// code blocks and code spans, and absolute URLs.
func links(md string) []string {
	md = fence.ReplaceAllString(md, "")
	md = codeSpan.ReplaceAllString(md, "")
	var out []string
	for _, re := range []*regexp.Regexp{inlineLink, refLink} {
		for _, m := range re.FindAllStringSubmatch(md, -1) {
			if target := m[1]; !scheme.MatchString(target) && !strings.HasPrefix(target, "//") {
				out = append(out, target)
			}
		}
	}
	return out
}

// resolve checks one relative target of a link in page.
func resolve(page, target string) error {
	path, fragment, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
		if _, err := os.Stat(file); err != nil {
			return fmt.Errorf("no such file or directory %s", filepath.ToSlash(path))
		}
	}
	if fragment == "" {
		return nil
	}
	if !strings.HasSuffix(file, ".md") {
		return fmt.Errorf("#%s in a file that is not Markdown", fragment)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if !anchors(string(data))[fragment] {
		return fmt.Errorf("no heading with the anchor #%s", fragment)
	}
	return nil
}

// anchors returns the anchors GitHub gives a page's headings: the text as
// rendered, lower-cased, with punctuation dropped and spaces as hyphens;
// a repeated anchor gets -1, -2, ….
func anchors(md string) map[string]bool {
	md = fence.ReplaceAllString(md, "")
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(md, -1) {
		text := inlineLink.ReplaceAllStringFunc(m[1], func(l string) string {
			return l[strings.Index(l, "[")+1 : strings.Index(l, "]")]
		})
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		for i := 1; out[slug]; i++ {
			slug = fmt.Sprintf("%s-%d", b.String(), i)
		}
		out[slug] = true
	}
	return out
}
