// Package toolcopy makes the copies of a secret value that tools keep in
// annotations, for tests that search kubediff's outputs for them.
package toolcopy

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
)

// GzipBase64 is how Rancher's wrangler keeps the object it applied in
// objectset.rio.cattle.io/applied: its JSON, gzipped, then base64'd.
func GzipBase64(s string) string {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	_, _ = z.Write([]byte(s)) // a bytes.Buffer takes every write
	_ = z.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}
