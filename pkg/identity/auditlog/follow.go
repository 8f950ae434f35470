// Package auditlog follows an audit log file the API server writes
// (--audit-log-path, JSON lines) and notes each write its events record.
// It starts at the file's end, as tail -F does, and follows it across
// rotation (the file renamed and a new one made, as the API server's own
// rotation does; or removed) and truncation (copytruncate).
//
// It reads with a reader of its own, woken by inotify (fsnotify) on the
// file's directory and by a one-second poll: tail libraries (nxadm/tail)
// reopen a renamed file without reading what was written to it last, and
// those lines would be writes with no user.
package auditlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/audit"
)

// Source names the writes this source notes.
const Source = "audit-log"

// poll is how often the file is looked at when no inotify event came
// (inotify can miss writes on some file systems, and the directory may
// not exist yet).
const poll = time.Second

// Follow follows path until stop is called. A file missing at start is
// waited for, with one warning; one that cannot be read fails at once,
// naming the key audit.log.path, and so does anything but a regular
// file (a FIFO, /dev/zero: see ErrNotRegular).
func Follow(path string, o audit.Options, notes identity.Noter, log *slog.Logger) (stop func(), err error) {
	path = filepath.Clean(path)
	r := &reader{path: path, opts: o, notes: notes, log: log, window: audit.NewWindow(0)}
	if err := r.openAtEnd(); errors.Is(err, ErrNotRegular) {
		return nil, fmt.Errorf("--audit-log (audit.log.path) %s %w; give the JSON file the API server writes with --audit-log-path", path, err)
	} else if err != nil {
		return nil, fmt.Errorf("audit.log.path %s: %w", path, err)
	}
	if r.file == nil {
		log.Warn("audit log does not exist yet; following it once it does", "path", path)
		r.missing = true
	} else {
		log.Info("following the API server's audit log", "path", path)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}, nil
}

// run reads whatever came each time the directory changes or the poll
// ticks.
func (r *reader) run(ctx context.Context) {
	defer r.close()
	var events <-chan fsnotify.Event
	watcher, err := fsnotify.NewWatcher()
	if err == nil {
		defer watcher.Close()
		if watcher.Add(filepath.Dir(r.path)) == nil {
			events = watcher.Events
		}
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			if filepath.Clean(ev.Name) != r.path {
				continue
			}
		case <-tick.C:
			if events == nil && watcher != nil && watcher.Add(filepath.Dir(r.path)) == nil {
				events = watcher.Events // the directory came
			}
		}
		// A pass that stopped at its bound goes on at once, after a look
		// at ctx, rather than at the next tick.
		more := r.step(ctx)
		for more && ctx.Err() == nil {
			more = r.step(ctx)
		}
	}
}

// openAtEnd opens the file and starts at its end; a file that does not
// exist leaves r.file nil.
func (r *reader) openAtEnd() error {
	f, err := openRegular(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return err
	}
	r.file, r.offset = f, end
	if end > 0 {
		// Started inside a line: its start is not ours to read.
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, end-1); err == nil && last[0] != '\n' {
			r.skipLine = true
		}
	}
	return nil
}

// ErrNotRegular is the error for a path that names anything but a
// regular file. A FIFO's open waits for a writer and its reads for
// data, /dev/zero's reads never end: either would hold the reader, and
// stop, forever.
var ErrNotRegular = errors.New("not a regular file")

// openRegular opens path without waiting (O_NONBLOCK: a FIFO's open
// would wait for a writer; a regular file reads as ever) and refuses
// anything but a regular file, so that what is read always ends.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("is %s, %w", kind(info.Mode()), ErrNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// kind names what a path that is not a regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}
