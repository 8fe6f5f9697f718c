//go:build unix

package atomicfile

import (
	"io"
	"io/fs"
	"syscall"
)

// write creates tmp (failing with fs.ErrExist when it exists), writes data
// and renames it to path. It calls the system directly: os.OpenFile adds a
// poller registration and two fcntl calls per file, os.Rename a stat,
// which for thousands of small outputs cost more than the writes.
func write(tmp, path string, data []byte) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o666)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return &fs.PathError{Op: "create", Path: tmp, Err: err}
	}
	for len(data) > 0 && err == nil {
		var n int
		n, err = syscall.Write(fd, data)
		switch {
		case err == syscall.EINTR:
			err = nil
		case err == nil && n == 0:
			err = io.ErrShortWrite
		case err == nil:
			data = data[n:]
		}
	}
	if cerr := syscall.Close(fd); err == nil && cerr != syscall.EINTR {
		err = cerr
	}
	if err == nil {
		if err = syscall.Rename(tmp, path); err == nil {
			return nil
		}
		err = &fs.PathError{Op: "rename", Path: path, Err: err}
	} else {
		err = &fs.PathError{Op: "write", Path: tmp, Err: err}
	}
	syscall.Unlink(tmp)
	return err
}
