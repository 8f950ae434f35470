package auditlog

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/audit"
)

// maxLine bounds a line kept while its end has not come: an event at the
// RequestResponse level holds two objects of at most about 1.5 MiB each.
const maxLine = 16 << 20

// reader reads the lines of one path, whichever file it names.
type reader struct {
	path   string
	opts   audit.Options
	notes  identity.Noter
	log    *slog.Logger
	window *audit.Window

	file     *os.File
	offset   int64  // bytes read from file
	partial  []byte // a line whose end has not been written yet
	skipLine bool   // drop what comes up to the next newline
	buf      []byte

	missing  bool // the file was missing at start and said so
	badLines int  // lines not read since the last good one
	readErr  bool // a read failed and said so
}

// step reads what was appended, then follows a rotation or truncation.
func (r *reader) step() {
	if r.file == nil && !r.openNew() {
		return
	}
	r.drain()
	named, err := os.Stat(r.path)
	open, openErr := r.file.Stat()
	switch {
	case openErr != nil || err != nil || !os.SameFile(named, open):
		// Rotated or removed: the writer closed the old file before
		// renaming it, so what it wrote last is read now, then any file
		// rotated after it, then the new one.
		r.drain()
		r.close()
		if openErr == nil {
			r.readRotatedAfter(open)
		}
		if r.openNew() {
			r.drain()
		}
	case open.Size() < r.offset:
		// Truncated: the writer starts again at the beginning.
		if _, err := r.file.Seek(0, io.SeekStart); err != nil {
			r.close()
			return
		}
		r.offset, r.partial, r.skipLine = 0, r.partial[:0], false
		r.drain()
	}
}

// readRotatedAfter reads whole each file rotated after old, oldest
// first: on a busy server the log can rotate twice between two reads, and
// the file in between, never opened, would be writes with no user. A
// rotated file is one beside the log named as the API server's rotation
// names it (audit-TIME.log) or logrotate does (audit.log.1,
// audit.log-DATE), not compressed, last written no earlier than old. A
// line read twice is noted once (the window knows its audit ID).
func (r *reader) readRotatedAfter(old fs.FileInfo) {
	dir, base := filepath.Split(r.path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	var rotated []fs.FileInfo
	for _, e := range entries {
		name := e.Name()
		ours := strings.HasPrefix(name, base+".") || strings.HasPrefix(name, base+"-") ||
			(strings.HasPrefix(name, stem+"-") && strings.HasSuffix(name, ext))
		if !ours || name == base || compressed(name) {
			continue
		}
		info, err := e.Info()
		if err == nil && info.Mode().IsRegular() && !os.SameFile(info, old) && !info.ModTime().Before(old.ModTime()) {
			rotated = append(rotated, info)
		}
	}
	slices.SortFunc(rotated, func(a, b fs.FileInfo) int {
		return cmp.Or(a.ModTime().Compare(b.ModTime()), cmp.Compare(a.Name(), b.Name()))
	})
	for _, info := range rotated {
		f, err := os.Open(filepath.Join(dir, info.Name()))
		if err != nil {
			continue // removed meanwhile (the server keeps few backups)
		}
		r.file, r.offset, r.partial, r.skipLine = f, 0, r.partial[:0], false
		r.drain()
		r.close()
	}
}

// compressed says whether a rotated file's name is that of a compressed
// one (--audit-log-compress, logrotate's compress), which is not read.
func compressed(name string) bool {
	return slices.Contains([]string{".gz", ".zst", ".bz2", ".xz"}, filepath.Ext(name))
}

// openNew opens the file the path names now, from its start (it was made
// after kubediff started following).
func (r *reader) openNew() bool {
	f, err := os.Open(r.path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.readFailed(err)
		}
		return false
	}
	if r.missing {
		r.log.Info("audit log appeared; following it", "path", r.path)
		r.missing = false
	}
	r.file, r.offset, r.partial, r.skipLine = f, 0, r.partial[:0], false
	return true
}

func (r *reader) close() {
	if r.file != nil {
		r.file.Close()
		r.file = nil
	}
}

// drain reads to the end of the file.
func (r *reader) drain() {
	if r.buf == nil {
		r.buf = make([]byte, 64<<10)
	}
	for {
		n, err := r.file.Read(r.buf)
		if n > 0 {
			r.offset += int64(n)
			r.split(r.buf[:n])
		}
		if err == io.EOF {
			r.readHealed()
			return
		}
		if err != nil {
			r.readFailed(err)
			return
		}
	}
}

// split hands each complete line to handle and keeps the rest.
func (r *reader) split(data []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !r.skipLine {
				r.partial = append(r.partial, data...)
			}
			if len(r.partial) > maxLine {
				r.log.Warn("audit log: a line longer than the bound was skipped", "path", r.path, "bound", maxLine)
				r.partial, r.skipLine = nil, true
			}
			return
		}
		line := data[:i]
		data = data[i+1:]
		if r.skipLine {
			r.skipLine, r.partial = false, r.partial[:0]
			continue
		}
		if len(r.partial) > 0 {
			line = append(r.partial, line...)
		}
		r.handle(line)
		r.partial = r.partial[:0]
	}
}

// handle notes the writes of one line's event.
func (r *reader) handle(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	writes, err := audit.ParseLine(line, Source, r.opts)
	if err != nil {
		if r.badLines == 0 {
			r.log.Warn("audit log: skipping lines that are not audit events (is --audit-log-format json?)", "path", r.path, "err", err)
		}
		r.badLines++
		return
	}
	if r.badLines > 0 {
		r.log.Info("audit log: reading audit events again", "path", r.path, "skipped", r.badLines)
		r.badLines = 0
	}
	for _, w := range r.window.Admit(writes, time.Now()) {
		r.notes.Note(w)
	}
}

func (r *reader) readFailed(err error) {
	if !r.readErr {
		r.log.Warn("audit log: cannot read it", "path", r.path, "err", err)
		r.readErr = true
	}
}

func (r *reader) readHealed() {
	if r.readErr {
		r.log.Info("audit log: reading it again", "path", r.path)
		r.readErr = false
	}
}
