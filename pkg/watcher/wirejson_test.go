package watcher

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	sigsjson "sigs.k8s.io/json"

	"github.com/kubediff/kubediff/pkg/managedfields"
	"github.com/kubediff/kubediff/pkg/objectjson"
)

// wireCases are objects as the API server sends them: the diff corpus
// (recorded from a real API server, managedFields included) and values
// that stress a decoder.
func wireCases(t *testing.T) map[string][]byte {
	t.Helper()
	cases := map[string][]byte{
		"numbers":       []byte(`{"kind":"X","spec":{"i":42,"neg":-7,"big":9223372036854775807,"huge":92233720368547758080,"f":1.5,"e":1e3,"z":0}}`),
		"escapes":       []byte(`{"kind":"X","data":{"a":"line\nnext \"quoted\" \u00e9 \ud83d\ude00 <b>&amp;</b>","empty":"","k:{\"type\":\"Ready\"}":{}}}`),
		"nulls":         []byte(`{"kind":"X","spec":{"n":null,"t":true,"f":false,"list":[],"obj":{},"nested":[[1,2],[{"a":[]}]]}}`),
		"fieldSets":     []byte(`{"kind":"X","metadata":{"name":"a","managedFields":[{"manager":"m","operation":"Apply","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"k:{\"name\":\"x\"}":{}}},"subresource":"status"}]},"spec":{"fieldsV1":{"kept":true}}}`),
		"deepFieldSets": []byte(`{"kind":"X","metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{".":{},"f:a":{"f:b":{"f:c":{"f:d":{}},"v:1":{}},"f:n":1}}},{"manager":"n","fieldsV1":"odd"},{"manager":"o","fieldsV1":{}}]}}`),
	}
	dirs, err := filepath.Glob("../diff/testdata/corpus/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, dir := range dirs {
		for _, name := range []string{"old.json", "new.json"} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			cases[filepath.Base(dir)+"/"+name] = data
		}
	}
	return cases
}

// The wire decoder gives what apimachinery's decoding gives, with
// managedFields slim as the cache keeps them.
func TestWireDecoderDecodesAsApimachinery(t *testing.T) {
	var w wireDecoder
	for name, obj := range wireCases(t) {
		t.Run(name, func(t *testing.T) {
			var want map[string]any
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(obj, &want); err != nil {
				t.Fatal(err)
			}
			managedfields.Slim(want)
			line := append(append([]byte(`{"type":"MODIFIED","object":`), obj...), '}')
			typ, got, err := w.event(line)
			if err != nil {
				t.Fatal(err)
			}
			if typ != "MODIFIED" || !reflect.DeepEqual(got, want) {
				t.Errorf("type %q, object\n%#v\nwant\n%#v", typ, got, want)
			}
		})
	}
}

func TestWireDecoderRejectsBrokenLines(t *testing.T) {
	var w wireDecoder
	for _, line := range []string{`{"type":"MODIFIED","object":{"a":1}`, `{"type":"MODIFIED","object":{"a":}}`, `[1]`, `{"type":"MODIFIED","object":{"a":1}}trailing`, `{"type":"MODIFIED","object":{"n":1.2.3}}`} {
		if _, _, err := w.event([]byte(line)); err == nil {
			t.Errorf("%s: no error", line)
		}
	}
}

// The cache form's encoder writes JSON that decodes to the same object as
// encoding/json's, with the same bytes but for HTML characters, which
// encoding/json escapes.
func TestObjectEncoderMatchesEncodingJSON(t *testing.T) {
	for name, obj := range wireCases(t) {
		t.Run(name, func(t *testing.T) {
			var m map[string]any
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(obj, &m); err != nil {
				t.Fatal(err)
			}
			got, release, err := objectjson.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			want, _ := json.Marshal(m)
			var back, wantBack map[string]any
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(got, &back); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			_ = sigsjson.UnmarshalCaseSensitivePreserveInts(want, &wantBack)
			if !reflect.DeepEqual(back, wantBack) {
				t.Errorf("round trip\n%#v\nwant\n%#v", back, wantBack)
			}
			// The cache's own decoder reads it back the same.
			if cached, err := decodeObject(got); err != nil || !reflect.DeepEqual(cached, wantBack) {
				t.Errorf("decodeObject: %v\n%#v\nwant\n%#v", err, cached, wantBack)
			}
			if name != "escapes" && string(got) != string(want) {
				t.Errorf("bytes\n%s\nwant\n%s", got, want)
			}
		})
	}
}
