package state

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"syscall"
)

// socketName is the socket's name in the state dir.
const socketName = "kubediff.sock"

// maxSocketPath is the longest path a unix socket's address holds: 107
// bytes on Linux, 103 on macOS (sun_path, its last byte a NUL).
const maxSocketPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// SocketPath is where a running kubediff answers history queries for
// its state dir (the history API, to whoever may open the socket, as to
// whoever may read the file): readers ask it rather than wait for the
// file, which the writer holds locked while it runs.
func SocketPath(dir string) string { return filepath.Join(dir, socketName) }

// ListenSocket listens on the dir's socket (SocketPath). The caller
// removes the socket's file when done: the listener does not.
func ListenSocket(dir string) (net.Listener, error) {
	var ln net.Listener
	err := viaShortPath(dir, func(addr string) error {
		l, err := net.Listen("unix", addr)
		if err != nil {
			return err
		}
		// Its name may be /proc/self/fd/N/…, which means another
		// directory, or nothing, once N is closed.
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		ln = l
		return nil
	})
	return ln, err
}

// DialSocket connects to the dir's socket.
func DialSocket(ctx context.Context, dir string) (net.Conn, error) {
	var conn net.Conn
	err := viaShortPath(dir, func(addr string) (err error) {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "unix", addr)
		return err
	})
	return conn, err
}

// viaShortPath calls use with an address for the dir's socket: its path,
// or on Linux, when that is too long for a socket's address (a state dir
// deep in a home or a CI workspace), the same file named through the
// dir's descriptor in /proc/self/fd, which the kernel resolves as a
// path. Elsewhere a path too long fails as it is.
func viaShortPath(dir string, use func(addr string) error) error {
	path := SocketPath(dir)
	if len(path) <= maxSocketPath || runtime.GOOS != "linux" {
		return use(path)
	}
	d, err := openPath(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	if err := use(fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), socketName)); err != nil {
		return fmt.Errorf("%s (through /proc/self/fd, the path being too long for a socket): %w", path, err)
	}
	return nil
}
