package historyapi

import (
	"context"
	"fmt"
	"strings"
)

// The two-moment diff is computed here rather than by difflib, whose
// matcher cannot be stopped and costs minutes on a value of tens of
// thousands of lines: this is Myers' diff in linear space, which checks
// the request's context as it goes and runs only on what lies between
// the lines both moments share at their start and end.

// lineDiff finds the longest common subsequence of a and b: match[i] is
// the line of b that a's line i is kept as, or -1 when it is removed.
type lineDiff struct {
	ctx   context.Context
	a, b  []int // the lines, numbered so that equal lines have equal numbers
	match []int
}

// diffLines matches the lines of a and b, or returns ctx's error once it
// ends.
func diffLines(ctx context.Context, a, b []string) ([]int, error) {
	ids := map[string]int{}
	number := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	d := &lineDiff{ctx: ctx, a: number(a), b: number(b), match: make([]int, len(a))}
	for i := range d.match {
		d.match[i] = -1
	}
	return d.match, d.compare(0, len(a), 0, len(b))
}

// compare matches a[aLo:aHi] with b[bLo:bHi].
func (d *lineDiff) compare(aLo, aHi, bLo, bHi int) error {
	for aLo < aHi && bLo < bHi && d.a[aLo] == d.b[bLo] {
		d.match[aLo] = bLo
		aLo, bLo = aLo+1, bLo+1
	}
	for aLo < aHi && bLo < bHi && d.a[aHi-1] == d.b[bHi-1] {
		d.match[aHi-1] = bHi - 1
		aHi, bHi = aHi-1, bHi-1
	}
	if aLo == aHi || bLo == bHi {
		return nil // only additions, or only removals
	}
	x, y, err := d.split(aLo, aHi, bLo, bHi)
	if err != nil || x <= aLo && y <= bLo || x >= aHi && y >= bHi {
		return err // no split found (nothing in common) or none that makes progress: all replaced
	}
	if err := d.compare(aLo, x, bLo, y); err != nil {
		return err
	}
	return d.compare(x, aHi, y, bHi)
}

// split finds a point of an edit script of a[aLo:aHi] and b[bLo:bHi]
// that is shortest, where the forward and backward searches meet (Myers
// 1986, the "middle snake"; as diff-match-patch's bisect). Both ranges are
// non-empty and differ at both ends. It returns aLo, bLo when the ranges
// have nothing in common.
func (d *lineDiff) split(aLo, aHi, bLo, bHi int) (int, int, error) {
	n, m := aHi-aLo, bHi-bLo
	maxD := (n + m + 1) / 2
	offset, size := maxD, 2*maxD+2
	forward, backward := make([]int, size), make([]int, size)
	for i := range forward {
		forward[i], backward[i] = -1, -1
	}
	forward[offset+1], backward[offset+1] = 0, 0
	delta := n - m
	odd := delta%2 != 0
	// Diagonals whose search left the grid are not searched again.
	var fStart, fEnd, bStart, bEnd int
	for step := 0; step < maxD; step++ {
		if err := d.ctx.Err(); err != nil {
			return 0, 0, err
		}
		for k := -step + fStart; k <= step-fEnd; k += 2 {
			x := furthest(forward, offset, k, step)
			y := x - k
			for x < n && y < m && d.a[aLo+x] == d.b[bLo+y] {
				x, y = x+1, y+1
			}
			forward[offset+k] = x
			switch {
			case x > n:
				fEnd += 2
				continue
			case y > m:
				fStart += 2
				continue
			case !odd:
				continue
			}
			if j := offset + delta - k; j >= 0 && j < size && backward[j] != -1 && x >= n-backward[j] {
				return aLo + x, bLo + y, nil
			}
		}
		for k := -step + bStart; k <= step-bEnd; k += 2 {
			x := furthest(backward, offset, k, step)
			y := x - k
			for x < n && y < m && d.a[aHi-x-1] == d.b[bHi-y-1] {
				x, y = x+1, y+1
			}
			backward[offset+k] = x
			switch {
			case x > n:
				bEnd += 2
				continue
			case y > m:
				bStart += 2
				continue
			case odd:
				continue
			}
			if j := offset + delta - k; j >= 0 && j < size && forward[j] != -1 && forward[j] >= n-x {
				fx := forward[j]
				return aLo + fx, bLo + fx - (j - offset), nil
			}
		}
	}
	return aLo, bLo, nil
}

// furthest is where a search along diagonal k goes on from at step: from
// the neighbour diagonal that reached further.
func furthest(v []int, offset, k, step int) int {
	if k == -step || k != step && v[offset+k-1] < v[offset+k+1] {
		return v[offset+k+1]
	}
	return v[offset+k-1] + 1
}

// unified writes the matched lines as a unified diff with three lines of
// context, as diff -u does ("" when nothing differs).
func unified(a, b []string, match []int, fromLabel, toLabel string) string {
	type edit struct {
		op   byte // ' ', '-' or '+'
		line string
		i, j int // the line's number in a and in b (before it, for an addition or removal)
	}
	var edits []edit
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && match[i] == -1:
			edits = append(edits, edit{'-', a[i], i, j})
			i++
		case j < len(b) && (i == len(a) || match[i] != j):
			edits = append(edits, edit{'+', b[j], i, j})
			j++
		default:
			edits = append(edits, edit{' ', a[i], i, j})
			i, j = i+1, j+1
		}
	}
	var out strings.Builder
	const context = 3
	for start := 0; start < len(edits); {
		first := start
		for first < len(edits) && edits[first].op == ' ' {
			first++
		}
		if first == len(edits) {
			break
		}
		// A hunk runs until more than twice the context lies unchanged.
		lo, hi := max(first-context, 0), first
		for k := first; k < len(edits); k++ {
			if edits[k].op != ' ' {
				hi = k + 1
			} else if k-hi >= 2*context {
				break
			}
		}
		hi = min(hi+context, len(edits))
		if out.Len() == 0 {
			fmt.Fprintf(&out, "--- %s\n+++ %s\n", fromLabel, toLabel)
		}
		var aLines, bLines int
		for _, e := range edits[lo:hi] {
			aLines += boolInt(e.op != '+')
			bLines += boolInt(e.op != '-')
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(edits[lo].i, aLines), hunkRange(edits[lo].j, bLines))
		for _, e := range edits[lo:hi] {
			out.WriteByte(e.op)
			out.WriteString(e.line)
		}
		start = hi
	}
	return out.String()
}

// hunkRange is a hunk's start and length as diff -u writes them: lines
// count from 1, an empty range names the line before it.
func hunkRange(start, length int) string {
	switch length {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, length)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
