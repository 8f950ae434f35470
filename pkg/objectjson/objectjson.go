// Package objectjson writes a Kubernetes object held as maps
// (unstructured) as JSON through a tokenizer (jsontext) rather than
// encoding/json's reflection, which cost a fifth of an update's CPU where
// kubediff encodes objects: the watch cache's form, and each state the
// history keeps.
package objectjson

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// objectEncoder writes an object's JSON: map keys sorted, as
// encoding/json sorts them, so an object's JSON is the same each time;
// HTML characters are not escaped (nothing renders it as HTML).
type objectEncoder struct {
	buf  bytes.Buffer
	enc  jsontext.Encoder
	keys []string
}

var encoders = sync.Pool{New: func() any { return new(objectEncoder) }}

// maxKeptBuffer is the largest buffer kept for the next object.
const maxKeptBuffer = 1 << 20

// Encode returns obj's JSON, in a buffer valid until release.
func Encode(obj map[string]any) (raw []byte, release func(), err error) {
	e := encoders.Get().(*objectEncoder)
	e.buf.Reset()
	e.enc.Reset(&e.buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	release = func() {
		if e.buf.Cap() <= maxKeptBuffer {
			encoders.Put(e)
		}
	}
	if err := e.value(obj); err != nil {
		release()
		return nil, func() {}, err
	}
	return bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")), release, nil
}

func (e *objectEncoder) value(v any) error {
	switch t := v.(type) {
	case map[string]any:
		return e.object(t)
	case []any:
		if err := e.enc.WriteToken(jsontext.BeginArray); err != nil {
			return err
		}
		for _, item := range t {
			if err := e.value(item); err != nil {
				return err
			}
		}
		return e.enc.WriteToken(jsontext.EndArray)
	case string:
		return e.enc.WriteToken(jsontext.String(t))
	case int64:
		return e.enc.WriteToken(jsontext.Int(t))
	case float64:
		return e.enc.WriteToken(jsontext.Float(t))
	case bool:
		return e.enc.WriteToken(jsontext.Bool(t))
	case nil:
		return e.enc.WriteToken(jsontext.Null)
	}
	raw, err := json.Marshal(v) // a value a transform put there: rare
	if err != nil {
		return err
	}
	return e.enc.WriteValue(raw)
}

func (e *objectEncoder) object(m map[string]any) error {
	if err := e.enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	// Keys of nested maps share one slice: each map's own sit at its end.
	start := len(e.keys)
	for k := range m {
		e.keys = append(e.keys, k)
	}
	slices.Sort(e.keys[start:])
	defer func() { e.keys = e.keys[:start] }()
	for i := start; i < start+len(m); i++ {
		k := e.keys[i]
		if err := e.enc.WriteToken(jsontext.String(k)); err != nil {
			return err
		}
		if err := e.value(m[k]); err != nil {
			return err
		}
	}
	return e.enc.WriteToken(jsontext.EndObject)
}
