package state

import (
	"os"

	"golang.org/x/sys/unix"
)

// openPath opens dir only as a place in the file tree (O_PATH): it needs
// search permission on the dir, not read permission.
func openPath(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}
