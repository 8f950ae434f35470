package watcher

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/kubediff/kubediff/pkg/managedfields"
)

// wireDecoder decodes a watch event's line into the event type and the
// object as nested maps, in one pass over a tokenizer (jsontext) rather
// than through reflection, and without materialising what the cache
// would drop at once: the field sets of metadata.managedFields below
// their first levels (pkg/managedfields), most of an object's bytes,
// which nothing reports (attribution reads each entry's manager,
// operation, time, subresource and which top fields it owns).
//
// Values decode as apimachinery decodes them: integers that fit in int64
// as int64, other numbers as float64.
type wireDecoder struct {
	dec   jsontext.Decoder
	empty bytes.Buffer // read from between inputs, so none is kept
}

// decoderOptions: the API server writes neither duplicate names nor
// invalid UTF-8, and checking costs time.
var decoderOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// start makes the decoder read data, which it parses in place (a
// bytes.Buffer is not copied), until done.
func (w *wireDecoder) start(data []byte) (done func()) {
	w.dec.Reset(bytes.NewBuffer(data), decoderOptions...)
	return func() { w.dec.Reset(&w.empty, decoderOptions...) }
}

// end checks that nothing follows the value read.
func (w *wireDecoder) end() error {
	if _, err := w.dec.ReadToken(); err != io.EOF {
		return fmt.Errorf("data after the value: %v", err)
	}
	return nil
}

// place is where in an object a value sits, as far as decoding cares.
type place uint8

const (
	elsewhere place = iota
	atRoot
	inMetadata
	inManagedFields      // the list
	inManagedFieldsEntry // one entry
)

// event decodes one line: {"type": ..., "object": {...}}.
func (w *wireDecoder) event(line []byte) (typ string, obj map[string]any, err error) {
	defer w.start(line)()
	if err := w.expect('{'); err != nil {
		return "", nil, err
	}
	for w.dec.PeekKind() == '"' {
		name, err := w.dec.ReadToken()
		if err != nil {
			return "", nil, err
		}
		switch name.String() {
		case "type":
			tok, err := w.dec.ReadToken()
			if err != nil {
				return "", nil, err
			}
			typ = tok.String()
		case "object":
			v, err := w.value(atRoot)
			if err != nil {
				return "", nil, err
			}
			obj, _ = v.(map[string]any)
		default:
			if err := w.dec.SkipValue(); err != nil {
				return "", nil, err
			}
		}
	}
	if err := w.expect('}'); err != nil {
		return "", nil, err
	}
	return typ, obj, w.end()
}

func (w *wireDecoder) expect(kind jsontext.Kind) error {
	tok, err := w.dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != kind {
		return fmt.Errorf("want %v, got %v", kind, tok.Kind())
	}
	return nil
}

func (w *wireDecoder) value(at place) (any, error) {
	switch w.dec.PeekKind() {
	case '{':
		return w.object(at)
	case '[':
		return w.array(at)
	case '0':
		raw, err := w.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return number(raw)
	}
	tok, err := w.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '"':
		return tok.String(), nil
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected %v", tok.Kind())
}

func (w *wireDecoder) object(at place) (map[string]any, error) {
	if err := w.expect('{'); err != nil {
		return nil, err
	}
	m := map[string]any{}
	for w.dec.PeekKind() == '"' {
		name, err := w.dec.ReadToken()
		if err != nil {
			return nil, err
		}
		key := name.String()
		if at == inManagedFieldsEntry && (!managedfields.Kept[key] || key == managedfields.FieldsKey && w.dec.PeekKind() != '{') {
			if err := w.dec.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		if at == inManagedFieldsEntry && key == managedfields.FieldsKey {
			if m[key], err = w.fieldSet(1); err != nil {
				return nil, err
			}
			continue
		}
		if m[key], err = w.value(childPlace(at, key)); err != nil {
			return nil, err
		}
	}
	return m, w.expect('}')
}

// fieldSet decodes a managedFields entry's field set at depth (1 for the
// top) as managedfields.Slim would leave it: fields only, each at the
// last kept level an empty set, the rest skipped unread.
func (w *wireDecoder) fieldSet(depth int) (map[string]any, error) {
	if err := w.expect('{'); err != nil {
		return nil, err
	}
	set := map[string]any{}
	for w.dec.PeekKind() == '"' {
		name, err := w.dec.ReadToken()
		if err != nil {
			return nil, err
		}
		key := name.String()
		switch {
		case !managedfields.IsField(key):
			err = w.dec.SkipValue()
		case depth == managedfields.Depth || w.dec.PeekKind() != '{':
			set[key] = map[string]any{}
			err = w.dec.SkipValue()
		default:
			set[key], err = w.fieldSet(depth + 1)
		}
		if err != nil {
			return nil, err
		}
	}
	return set, w.expect('}')
}

func (w *wireDecoder) array(at place) ([]any, error) {
	if err := w.expect('['); err != nil {
		return nil, err
	}
	item := elsewhere
	if at == inManagedFields {
		item = inManagedFieldsEntry
	}
	a := []any{}
	for k := w.dec.PeekKind(); k != ']' && k != 0; k = w.dec.PeekKind() {
		v, err := w.value(item)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
	return a, w.expect(']')
}

func childPlace(at place, key string) place {
	switch {
	case at == atRoot && key == "metadata":
		return inMetadata
	case at == inMetadata && key == "managedFields":
		return inManagedFields
	}
	return elsewhere
}

// number is a JSON number as apimachinery decodes one: int64 when it is
// an integer that fits, float64 otherwise.
func number(raw []byte) (any, error) {
	if !bytes.ContainsAny(raw, ".eE") {
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", raw, err)
	}
	return f, nil
}

var wireDecoders = sync.Pool{New: func() any { return new(wireDecoder) }}

// decodeObject decodes an object's JSON (a cached one: its field sets
// slim already) whole.
func decodeObject(raw []byte) (map[string]any, error) {
	w := wireDecoders.Get().(*wireDecoder)
	defer wireDecoders.Put(w)
	defer w.start(raw)()
	obj, err := w.object(elsewhere)
	if err != nil {
		return nil, err
	}
	return obj, w.end()
}
