package auditlog

import (
	"bytes"
	"cmp"
	"context"
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

// maxPass bounds what one pass reads of the followed file before the
// reader looks up (at ctx, at a rotation): a log written faster than it
// is read must not keep the reader, or stop, in one pass.
const maxPass = 64 << 20

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
	special  bool // the path names a file that is not regular, and said so
	badLines int  // lines not read since the last good one
	readErr  bool // a read failed and said so
}

// step reads what was appended, then follows a rotation or truncation.
// It reports whether it stopped at maxPass with more to read.
func (r *reader) step(ctx context.Context) (more bool) {
	if r.file == nil && !r.openNew() {
		return false
	}
	if !r.drain(ctx, maxPass) {
		return ctx.Err() == nil
	}
	named, err := os.Stat(r.path)
	open, openErr := r.file.Stat()
	switch {
	case openErr != nil || err != nil || !os.SameFile(named, open):
		// Rotated or removed: the writer closed the old file before
		// renaming it, so what it wrote last is read now, then any file
		// rotated after it, then the new one.
		r.drain(ctx, 0)
		r.close()
		if openErr == nil {
			r.readRotatedAfter(ctx, open)
		}
		if r.openNew() {
			return !r.drain(ctx, maxPass) && ctx.Err() == nil
		}
	case open.Size() < r.offset:
		// Truncated: the writer starts again at the beginning.
		if _, err := r.file.Seek(0, io.SeekStart); err != nil {
			r.close()
			return false
		}
		r.offset, r.partial, r.skipLine = 0, r.partial[:0], false
		return !r.drain(ctx, maxPass) && ctx.Err() == nil
	}
	return false
}

// readRotatedAfter reads whole each file rotated after old, oldest
// first: on a busy server the log can rotate twice between two reads, and
// the file in between, never opened, would be writes with no user. A
// rotated file is one beside the log named as the API server's rotation
// names it (audit-TIME.log) or logrotate does (audit.log.1,
// audit.log-DATE), not compressed, last written no earlier than old. A
// line read twice is noted once (the window knows its audit ID).
func (r *reader) readRotatedAfter(ctx context.Context, old fs.FileInfo) {
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
		f, err := openRegular(filepath.Join(dir, info.Name()))
		if err != nil {
			continue // removed meanwhile (the server keeps few backups)
		}
		r.file, r.offset, r.partial, r.skipLine = f, 0, r.partial[:0], false
		r.drain(ctx, 0)
		r.close()
	}
}

// compressed says whether a rotated file's name is that of a compressed
// one (--audit-log-compress, logrotate's compress), which is not read.
func compressed(name string) bool {
	return slices.Contains([]string{".gz", ".zst", ".bz2", ".xz"}, filepath.Ext(name))
}

// openNew opens the file the path names now, from its start (it was made
// after kubediff started following). A path that names anything but a
// regular file now is refused, with one line until it names one again.
func (r *reader) openNew() bool {
	f, err := openRegular(r.path)
	switch {
	case errors.Is(err, ErrNotRegular):
		if !r.special {
			r.log.Error("audit log: not read: the path "+err.Error()+"; give the JSON file the API server writes with --audit-log-path",
				"path", r.path)
			r.special = true
		}
		return false
	case err != nil:
		if !errors.Is(err, fs.ErrNotExist) {
			r.readFailed(err)
		}
		return false
	}
	if r.special {
		r.log.Info("audit log: the path names a regular file again; following it", "path", r.path)
		r.special = false
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

// drain reads to the end of the file and reports whether it got there:
// it stops early when ctx is done, or after budget bytes (0: none), so
// that no file, however fast it grows, holds the reader from stopping.
func (r *reader) drain(ctx context.Context, budget int64) (atEnd bool) {
	if r.buf == nil {
		r.buf = make([]byte, 64<<10)
	}
	var read int64
	for ctx.Err() == nil && (budget == 0 || read < budget) {
		n, err := r.file.Read(r.buf)
		if n > 0 {
			r.offset += int64(n)
			read += int64(n)
			r.split(r.buf[:n])
		}
		if err == io.EOF {
			r.readHealed()
			return true
		}
		if err != nil {
			r.readFailed(err)
			return true // nothing more to read in this pass
		}
	}
	return false
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
