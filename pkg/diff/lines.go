package diff

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/kubediff/kubediff/pkg/record"
)

const (
	// lineContext is how many unchanged lines surround each hunk, as in
	// diff -u and the unified style.
	lineContext = 3
	// maxHunkBytes bounds the lines of one change's hunks together, so a
	// rewritten 1 MB file gives a record of a few KiB, as the cut values
	// do; the hunks then stop with LineDiff.Truncated.
	maxHunkBytes = 4 << 10
	// maxLineBytes bounds one line of a hunk (minified JSON is one long
	// line); a longer line is cut around its first difference.
	maxLineBytes = 256
	// matchWindow is how many lines from a difference on difflib's matcher
	// compares at once, doubled up to maxMatchWindow while it finds no
	// equal line. Its time grows with both sides' lines and with the
	// differences between them: a whole 27,000-line file with 2,000 lines
	// changed took it 6 s, on the goroutine that receives the watch
	// events. In windows, the work follows the few hundred changed lines
	// the hunks can show.
	matchWindow    = 200
	maxMatchWindow = 3200
	// noNewline joins a value's last line to the note shown after it when
	// only one of the two values ends with a newline. Lines never hold a
	// newline, so the joined form cannot be mistaken for a line, and the
	// line then compares unequal to its twin that has a newline.
	noNewline = "\n\\ no newline at end"
)

// lineDiff returns the hunks of lines that differ between two strings,
// each line prefixed "  ", "- " or "+ ", within maxHunkBytes.
func lineDiff(a, b string) *record.LineDiff {
	al, bl := splitLines(a), splitLines(b)
	if strings.HasSuffix(a, "\n") != strings.HasSuffix(b, "\n") {
		markNoNewline(al, a)
		markNoNewline(bl, b)
	}
	ld := &record.LineDiff{FromLines: len(al), ToLines: len(bl), Hunks: []record.Hunk{}}
	h := hunks{a: al, b: bl, budget: maxHunkBytes}
	codes := lineOpCodes(al, bl)
	for k, c := range codes {
		if !h.code(c, k == len(codes)-1) {
			ld.Truncated = true
			break
		}
	}
	h.close()
	ld.Hunks = append(ld.Hunks, h.done...)
	return ld
}

// hunks groups opcodes into hunks with lineContext lines of context, as
// difflib's GetGroupedOpCodes does, within a budget of bytes.
type hunks struct {
	a, b   []string
	budget int
	done   []record.Hunk
	cur    *record.Hunk
	// ctxI and ctxJ are where the context of the next hunk starts.
	ctxI, ctxJ int
}

// code adds one opcode, the last one if last; false when the budget ran
// out.
func (h *hunks) code(c difflib.OpCode, last bool) bool {
	if c.Tag == 'e' {
		n := c.I2 - c.I1
		if h.cur != nil {
			keep := n
			if last || n > 2*lineContext {
				keep = min(n, lineContext)
			}
			if !h.context(c.I1, c.I1+keep) {
				return false
			}
			if keep < n || last {
				h.close()
			}
		}
		h.ctxI, h.ctxJ = max(c.I1, c.I2-lineContext), max(c.J1, c.J2-lineContext)
		return true
	}
	if h.cur == nil {
		h.cur = &record.Hunk{FromLine: h.ctxI + 1, ToLine: h.ctxJ + 1}
		if !h.context(h.ctxI, c.I1) {
			return false
		}
	}
	// Old lines leave half the budget to the new ones, so a rewrite cut
	// short still shows both.
	floor := 0
	if c.J2 > c.J1 {
		floor = h.budget / 2
	}
	cut := false
	for i := c.I1; i < c.I2 && !cut; i++ {
		if cut = !h.line("- ", h.a[i], counterpart(h.b, c.J1+i-c.I1, c.J2), floor); !cut {
			h.cur.FromCount++
		}
	}
	for j := c.J1; j < c.J2; j++ {
		if !h.line("+ ", h.b[j], counterpart(h.a, c.I1+j-c.J1, c.I2), 0) {
			return false
		}
		h.cur.ToCount++
	}
	h.ctxI, h.ctxJ = c.I2, c.J2
	return !cut
}

// context adds the old lines [from, to) as context.
func (h *hunks) context(from, to int) bool {
	for i := from; i < to; i++ {
		if !h.line("  ", h.a[i], h.a[i], 0) {
			return false
		}
		h.cur.FromCount++
		h.cur.ToCount++
	}
	return true
}

// line adds one line, cut to maxLineBytes around its first difference
// from other (its counterpart on the other side, if any), unless that
// would leave less than floor of the budget.
func (h *hunks) line(prefix, line, other string, floor int) bool {
	text, note, hasNote := strings.Cut(line, "\n")
	otherText, _, _ := strings.Cut(other, "\n")
	text = prefix + excerpt(text, otherText, maxLineBytes)
	if h.budget-len(text)-len(note) < floor {
		return false
	}
	h.budget -= len(text) + len(note)
	h.cur.Lines = append(h.cur.Lines, text)
	if hasNote {
		h.cur.Lines = append(h.cur.Lines, note)
	}
	return true
}

// close ends the current hunk, if it has lines.
func (h *hunks) close() {
	if h.cur != nil && len(h.cur.Lines) > 0 {
		h.done = append(h.done, *h.cur)
	}
	h.cur = nil
}

// counterpart is lines[i] if i is before end, else "": the line a changed
// line replaced, or was replaced by, when both sides changed as many.
func counterpart(lines []string, i, end int) string {
	if i < end {
		return lines[i]
	}
	return ""
}

// splitLines splits s into lines without their newline; a final newline
// ends the last line rather than starting an empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// markNoNewline appends the note to the last line of s when s does not
// end with a newline.
func markNoNewline(lines []string, s string) {
	if len(lines) > 0 && !strings.HasSuffix(s, "\n") {
		lines[len(lines)-1] += noNewline
	}
}

// lineOpCodes returns opcodes turning a into b, difflib's, but found
// with bounded work: equal runs are skipped by comparing lines in step,
// and difflib's matcher only sees a window from each difference on (see
// matchWindow). Once more lines changed than the hunks could show, the
// rest is one replacement, which the hunks cut short.
func lineOpCodes(a, b []string) []difflib.OpCode {
	tail := 0
	for tail < len(a) && tail < len(b) && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	aEnd, bEnd := len(a)-tail, len(b)-tail
	var codes []difflib.OpCode
	i, j, changed := 0, 0, 0
	for {
		k := 0
		for i+k < aEnd && j+k < bEnd && a[i+k] == b[j+k] {
			k++
		}
		codes = appendCode(codes, difflib.OpCode{Tag: 'e', I1: i, I2: i + k, J1: j, J2: j + k})
		i, j = i+k, j+k
		if i == aEnd && j == bEnd {
			break
		}
		if changed > maxHunkBytes/len("- ") {
			codes = appendCode(codes, difflib.OpCode{Tag: 'r', I1: i, I2: aEnd, J1: j, J2: bEnd})
			break
		}
		window := matchStart(a[i:aEnd], b[j:bEnd])
		for _, c := range window {
			if c.Tag != 'e' {
				changed += c.I2 - c.I1 + c.J2 - c.J1
			}
			codes = appendCode(codes, difflib.OpCode{Tag: c.Tag, I1: c.I1 + i, I2: c.I2 + i, J1: c.J1 + j, J2: c.J2 + j})
		}
		end := window[len(window)-1]
		i, j = i+end.I2, j+end.J2
	}
	return appendCode(codes, difflib.OpCode{Tag: 'e', I1: aEnd, I2: len(a), J1: bEnd, J2: len(b)})
}

// matchStart returns difflib's opcodes for the start of a and b, whose
// first lines differ: in windows of lines growing from matchWindow to
// maxMatchWindow, up to the last equal run in the window (the lines after
// it may match lines beyond the window), or all replaced when no window
// up to maxMatchWindow holds an equal line.
func matchStart(a, b []string) []difflib.OpCode {
	for w := matchWindow; ; w *= 2 {
		wa, wb := min(len(a), w), min(len(b), w)
		if wa == 0 || wb == 0 {
			return []difflib.OpCode{{Tag: 'r', I2: len(a), J2: len(b)}}
		}
		codes := difflib.NewMatcher(a[:wa], b[:wb]).GetOpCodes()
		if wa == len(a) && wb == len(b) {
			return codes
		}
		for k := len(codes) - 1; k > 0; k-- {
			if codes[k].Tag == 'e' {
				return codes[:k]
			}
		}
		if w >= maxMatchWindow {
			return []difflib.OpCode{{Tag: 'r', I2: wa, J2: wb}}
		}
	}
}

// appendCode appends c to codes, dropping it if empty and merging it into
// the last code if both are equal runs.
func appendCode(codes []difflib.OpCode, c difflib.OpCode) []difflib.OpCode {
	if c.I1 == c.I2 && c.J1 == c.J2 {
		return codes
	}
	if n := len(codes); n > 0 && c.Tag == 'e' && codes[n-1].Tag == 'e' {
		codes[n-1].I2, codes[n-1].J2 = c.I2, c.J2
		return codes
	}
	return append(codes, c)
}
