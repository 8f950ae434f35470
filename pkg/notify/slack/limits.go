package slack

import (
	"encoding/json"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// Slack's limits, which it enforces by refusing the message
// (invalid_blocks, msg_blocks_too_long): a refused message is final, so
// a record over them would be lost. Blocks
// (https://api.slack.com/reference/block-kit/blocks): at most 50 a
// message, a section's text at most 3000 characters, a header's at most
// 150. A message's text: 40,000 characters, past which Slack cuts it
// (https://api.slack.com/changelog/2018-04-truncating-really-long-messages).
// All blocks together: about 12,000 characters of text, which Slack does
// not document but enforces with msg_blocks_too_long
// (https://github.com/slackapi/bolt-js/issues/2509, where Slack's
// engineer names 12,000 with a buffer for the blocks' containers).
const (
	maxBlocks      = 50
	maxSectionText = 3000
	maxHeaderText  = 150
	maxMessageText = 40000
	// maxBlocksJSON bounds a message's blocks as encoded: the text they
	// hold is less, so it stays under the 12,000 characters, and one
	// record's blocks (a header and a section of 3000) always fit.
	maxBlocksJSON = 12000
	// A record takes at most two blocks (section, divider) and one is kept
	// for the "more" note, so a batch's blocks are never too many.
	maxBatch = (maxBlocks - 1) / 2
)

// Shares of a section that one part of it may take, so that a rule's
// summary, an Event's message or a name thousands of characters long
// leaves room for the rest and the section stays under maxSectionText:
// a head of all of them at their most (about 2,650 bytes) still leaves
// room for the note of changes left out.
const (
	maxSummary  = 1000
	maxEvent    = 700
	maxTitle    = 250
	maxName     = 150 // an API version, a user, a manager, a release
	maxAccess   = 250 // one sentence of access: ten leave room for the changes
	maxFallback = 200 // one record's title in the notification's text
)

// fit is s escaped when that is at most max long as size measures, or
// else as much of s as fits with a note of how many characters were
// left out: "… (cut: 9737 characters more)". A record over Slack's
// limits is posted cut, and says so, rather than refused. esc must
// replace characters one by one (escape does), so that sizes add up.
func fit(s string, max int, esc func(string) string, size func(string) int) string {
	if e := esc(s); size(e) <= max {
		return e
	}
	total := utf8.RuneCountInString(s)
	budget := max - size(cutNote(total)) // the note is longest when all is cut
	end, used, left := 0, 0, total
	for end < len(s) {
		r, w := utf8.DecodeRuneInString(s[end:])
		k := size(esc(string(r)))
		if used+k > budget {
			break
		}
		used, end, left = used+k, end+w, left-1
	}
	return esc(s[:end]) + cutNote(left)
}

// cutNote says how many characters were left out.
func cutNote(n int) string { return fmt.Sprintf("… (cut: %d characters more)", n) }

// bytesLen measures mrkdwn text by its bytes: never fewer than the
// characters Slack counts, however it counts them.
func bytesLen(s string) int { return len(s) }

// unitsLen measures text in UTF-16 code units, as Slack may count
// characters, for plain text whose every character should stay.
func unitsLen(s string) int { return len(utf16.Encode([]rune(s))) }

func plain(s string) string { return s }

// split lays sections out as messages, as many sections a message as
// fit Slack's limits on blocks, in order.
func split(sections []section) []outgoing {
	var out []outgoing
	start, size := 0, 0
	for i, sec := range sections {
		n := blockSize(sec) + len(`,{"type":"divider"},`)
		if i > start && (i-start == maxBatch || size+n > maxBlocksJSON) {
			out = append(out, layout(sections[start:i]))
			start, size = i, 0
		}
		size += n
	}
	if start < len(sections) {
		out = append(out, layout(sections[start:]))
	}
	return out
}

// outgoing is one message's blocks and notification text.
type outgoing struct {
	blocks   []slack.Block
	fallback string
}

func layout(sections []section) outgoing {
	blocks, fallback := message(sections)
	return outgoing{blocks, fallback}
}

// blockSize is a section's block as encoded.
func blockSize(sec section) int {
	b, err := json.Marshal(sectionBlock(sec.text))
	if err != nil {
		return maxBlocksJSON // alone in its message, where it fits
	}
	return len(b)
}
