package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kubediff/kubediff/pkg/identity"
)

// Error messages name the shape that was expected, never the content
// read: a body that fails to decode may hold a Secret.

// ParseLine reads one line of an audit log (one Event) into the writes it
// records.
func ParseLine(line []byte, source string, o Options) ([]identity.Write, error) {
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil && !typeMismatch(err) {
		return nil, errors.New("not a JSON audit event")
	}
	if ev.APIVersion != Version {
		return nil, fmt.Errorf("an audit event of %s, not %s", versionName(ev.APIVersion), Version)
	}
	return ev.writes(source, o), nil
}

// DecodeList reads an EventList (the audit webhook's body) into the writes
// its events record. It reads one event at a time: memory holds the
// largest event, not the whole list.
func DecodeList(r io.Reader, source string, o Options) ([]identity.Write, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var writes []identity.Write
	var version string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, readError(err)
		}
		switch key {
		case "apiVersion":
			if err := dec.Decode(&version); err != nil {
				return nil, readError(err)
			}
		case "items":
			if writes, err = decodeItems(dec, source, o); err != nil {
				return nil, err
			}
		default:
			var skip json.RawMessage // kind, metadata: small
			if err := dec.Decode(&skip); err != nil {
				return nil, readError(err)
			}
		}
	}
	if version != Version {
		return nil, fmt.Errorf("an audit event list of %s, not %s (the API server's --audit-webhook-version)", versionName(version), Version)
	}
	return writes, nil
}

// decodeItems reads the list's items one event at a time.
func decodeItems(dec *json.Decoder, source string, o Options) ([]identity.Write, error) {
	if err := expectDelim(dec, '['); err != nil {
		return nil, err
	}
	var writes []identity.Write
	for dec.More() {
		var ev event
		if err := dec.Decode(&ev); err != nil && !typeMismatch(err) {
			return nil, readError(err)
		}
		writes = append(writes, ev.writes(source, o)...)
	}
	_, err := dec.Token() // ]
	return writes, readError(err)
}

// versionName names an audit API version, and nothing else that a post
// may put in its place.
func versionName(v string) string {
	if rest, ok := strings.CutPrefix(v, "audit.k8s.io/"); ok && len(rest) <= 10 && strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz0123456789") == "" {
		return v
	}
	return "another version"
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return readError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("not an audit event list: expected %q", want)
	}
	return nil
}

// readError keeps an error of the reader (a body over its limit) as it
// is, and says only "not JSON" of a syntax error.
func readError(err error) error {
	var syntax *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("not a JSON audit event list")
	case typeMismatch(err):
		return errors.New("not an audit event list")
	}
	return err
}

// typeMismatch reports a field of another type than expected: a custom
// resource whose top-level "items" or "details" is not what a list's or
// a Status's is. The decoder fills the rest and goes on.
func typeMismatch(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}
