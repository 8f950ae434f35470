package release

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

const (
	// maxDecompressed bounds what is read of one release record's JSON.
	// The record itself fits in one object (etcd's 1.5 MiB), but gzip
	// inflates up to about 1,000 times: a record could stand for a GiB.
	// Helm writes the chart's metadata near the start (after the name
	// and info, before the templates, values and manifest), and reading
	// stops there; 16 MiB is far beyond where any real release puts it.
	maxDecompressed = 16 << 20
	// maxMetadata bounds the chart metadata kept to decode: Chart.yaml's
	// fields, a few KiB in real charts.
	maxMetadata = 256 << 10
)

var (
	// errTooLarge is a record whose chart metadata is not within
	// maxDecompressed bytes of its JSON.
	errTooLarge = errors.New("the release JSON's chart metadata is not within its first 16 MiB")
	errSyntax   = errors.New("the release is not JSON")
	// errCaptureTooLarge is a value read longer than the scanner keeps.
	errCaptureTooLarge = errors.New("the value is longer than is kept")
)

// chartOf reads the chart's name, version and appVersion from a
// release's record, and nothing else: the release JSON also holds the
// values (passwords among them), the chart's templates and the
// manifest, which are read past without being kept. Every step streams
// (base64, gzip, the JSON), so what is held is a few buffers whatever
// the record decompresses to. A Secret's data is base64 once more than
// a ConfigMap's. A record without readable metadata names no chart;
// errTooLarge says it was cut at maxDecompressed.
func chartOf(obj *unstructured.Unstructured, inSecret bool) (record.Release, error) {
	s, done, ok := releaseJSON(obj, inSecret, maxMetadata)
	if !ok {
		return record.Release{}, nil
	}
	defer done()
	found, err := s.metadata()
	if errors.Is(err, errTooLarge) {
		return record.Release{}, err
	}
	var meta struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err != nil || json.Unmarshal(found, &meta) != nil || meta.Name == "" {
		return record.Release{}, nil
	}
	return record.Release{Chart: meta.Name + "-" + meta.Version, AppVersion: meta.AppVersion}, nil
}

// releaseJSON is a scanner over a release record's JSON, capturing at
// most limit bytes, and what to call once done with it; false when the
// record is not gzip as Helm writes it.
func releaseJSON(obj *unstructured.Unstructured, inSecret bool, limit int) (s *scanner, done func(), ok bool) {
	encoded, _, _ := unstructured.NestedString(obj.Object, "data", "release")
	in := base64.NewDecoder(base64.StdEncoding, strings.NewReader(encoded))
	if inSecret {
		in = base64.NewDecoder(base64.StdEncoding, in)
	}
	raw := bufio.NewReader(in)
	in, done = raw, func() {}
	if head, _ := raw.Peek(3); bytes.Equal(head, []byte{0x1f, 0x8b, 0x08}) { // gzip, as Helm writes it
		z, err := gzip.NewReader(raw)
		if err != nil {
			return nil, nil, false
		}
		in, done = z, func() { z.Close() }
	}
	return &scanner{r: bufio.NewReader(&capped{r: in, left: maxDecompressed}), limit: limit}, done, true
}

// capped reads at most left bytes of r, then fails with errTooLarge.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// scanner walks JSON a byte at a time without holding what it passes:
// encoding/json's Decoder reads a whole top-level value (the release,
// manifest included) into memory before decoding any of it. It checks
// only what it needs to find its way; what it captures is decoded by
// encoding/json, which checks the rest.
type scanner struct {
	r *bufio.Reader
	// capture, when not nil, receives each byte read, up to limit.
	capture []byte
	limit   int
}

func (s *scanner) next() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, err
	}
	if s.capture != nil {
		if len(s.capture) >= s.limit {
			return 0, errCaptureTooLarge
		}
		s.capture = append(s.capture, c)
	}
	return c, nil
}

// token is the next byte that is not whitespace.
func (s *scanner) token() (byte, error) {
	for {
		c, err := s.next()
		if err != nil || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			return c, err
		}
	}
}

// metadata is the JSON of the release's chart.metadata, read no
// further than its end; nil when the release has none.
func (s *scanner) metadata() ([]byte, error) {
	for _, key := range []string{"chart", "metadata"} {
		if c, err := s.token(); err != nil || c != '{' {
			return nil, orSyntax(err)
		}
		if found, err := s.field(key); err != nil || !found {
			return nil, err
		}
	}
	s.capture = make([]byte, 0, 1024)
	c, err := s.token()
	if err == nil {
		err = s.skip(c)
	}
	found := s.capture
	s.capture = nil
	return found, err
}

// field reads the object whose '{' was read up to the value of key,
// skipping the other members; false when the object ends without it.
func (s *scanner) field(key string) (bool, error) {
	for {
		c, err := s.token()
		switch {
		case err != nil:
			return false, err
		case c == '}':
			return false, nil
		case c == ',':
			continue
		case c != '"':
			return false, errSyntax
		}
		name, err := s.key()
		if err != nil {
			return false, err
		}
		if name == key {
			return true, nil
		}
		if c, err = s.token(); err == nil {
			err = s.skip(c)
		}
		if err != nil {
			return false, err
		}
	}
}

// eachLine reads a JSON string whose '"' was read to its end, unescaped,
// and hands each of its lines to take (the slice is reused), the last
// one too.
func (s *scanner) eachLine(take func([]byte) error) error {
	var line []byte
	for {
		c, err := s.next()
		if err != nil {
			return err
		}
		switch c {
		case '"':
			return take(line)
		case '\\':
			if line, err = s.escaped(line); err != nil {
				return err
			}
		default:
			line = append(line, c)
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			if err := take(line[:n-1]); err != nil {
				return err
			}
			line = line[:0]
		}
		if len(line) > maxDocument {
			return errCaptureTooLarge
		}
	}
}

// escaped appends to line what the escape whose '\\' was read stands for.
func (s *scanner) escaped(line []byte) ([]byte, error) {
	c, err := s.next()
	if err != nil {
		return line, err
	}
	switch c {
	case 'n':
		return append(line, '\n'), nil
	case 't':
		return append(line, '\t'), nil
	case 'r':
		return append(line, '\r'), nil
	case 'b':
		return append(line, '\b'), nil
	case 'f':
		return append(line, '\f'), nil
	case 'u':
		r, err := s.hexRune()
		if err != nil {
			return line, err
		}
		if utf16.IsSurrogate(r) {
			if a, err := s.next(); err != nil || a != '\\' {
				return line, errSyntax
			}
			if b, err := s.next(); err != nil || b != 'u' {
				return line, errSyntax
			}
			low, err := s.hexRune()
			if err != nil {
				return line, err
			}
			r = utf16.DecodeRune(r, low)
		}
		return utf8.AppendRune(line, r), nil
	}
	return append(line, c), nil // \" \\ \/
}

// hexRune reads the four hex digits of a \u escape.
func (s *scanner) hexRune() (rune, error) {
	var r rune
	for range 4 {
		c, err := s.next()
		if err != nil {
			return 0, err
		}
		d := strings.IndexByte("0123456789abcdef", c|0x20)
		if d < 0 {
			return 0, errSyntax
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}

// key reads a member's name, whose '"' was read, and the ':' after it.
// A name that is long or escaped is none the caller looks for: it is
// read past and answered as "".
func (s *scanner) key() (string, error) {
	var name [16]byte
	n, plain := 0, true
	for {
		c, err := s.next()
		if err != nil {
			return "", err
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			plain = false
			if _, err := s.next(); err != nil {
				return "", err
			}
		}
		if n < len(name) {
			name[n] = c
		}
		n++
	}
	if c, err := s.token(); err != nil || c != ':' {
		return "", orSyntax(err)
	}
	if !plain || n > len(name) {
		return "", nil
	}
	return string(name[:n]), nil
}

// skip reads past the value whose first byte c was read.
func (s *scanner) skip(c byte) error {
	switch {
	case c == '"':
		return s.skipString()
	case c == '{' || c == '[':
	case c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z':
		return s.skipScalar()
	default:
		return errSyntax
	}
	for depth := 1; depth > 0; {
		c, err := s.next()
		switch {
		case err != nil:
			return err
		case c == '"':
			err = s.skipString()
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// skipString reads past a string whose opening '"' was read.
func (s *scanner) skipString() error {
	for {
		c, err := s.next()
		if err != nil {
			return err
		}
		switch c {
		case '\\':
			if _, err := s.next(); err != nil {
				return err
			}
		case '"':
			return nil
		}
	}
}

// skipScalar reads past the rest of a number, true, false or null,
// leaving the byte after it unread.
func (s *scanner) skipScalar() error {
	for {
		b, err := s.r.Peek(1)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if c := b[0]; c != '.' && c != '+' && c != '-' && !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') {
			return nil
		}
		if _, err := s.next(); err != nil {
			return err
		}
	}
}

// orSyntax is err, or errSyntax when the JSON was read but not as
// expected.
func orSyntax(err error) error {
	if err != nil {
		return err
	}
	return errSyntax
}
