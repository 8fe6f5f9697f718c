//go:build unix

package store

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// walIndex is the start of an SQLite database's WAL index (its "-shm"
// file), mapped read-only: the header every process's connections share
// (https://www.sqlite.org/walformat.html, "The WAL-Index Header"). A
// commit, by any process, rewrites it with its change counter (iChange)
// incremented, its second copy first, then the first.
type walIndex struct {
	mem []byte
}

// walIndexHeaderBytes covers both copies of the header.
const walIndexHeaderBytes = 2 * 48

// mapWALIndex maps the header of the WAL index of the database at path.
// The caller keeps a connection to the database open (in WAL mode, past
// its first read) for as long as the mapping lives: the process then keeps
// the index open, so no other process truncates or recreates it.
func mapWALIndex(path string) (*walIndex, error) {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < walIndexHeaderBytes {
		return nil, fmt.Errorf("WAL index %s: %d bytes", f.Name(), st.Size())
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, walIndexHeaderBytes, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map WAL index %s: %w", f.Name(), err)
	}
	return &walIndex{mem: mem}, nil
}

// header returns the WAL index header when its two copies agree (false
// while a commit is writing it, or on a fault reading the mapping). It
// reads the first copy, then the second, as SQLite's readers do.
func (w *walIndex) header() (h walHeader, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	var second walHeader
	base := unsafe.Pointer(&w.mem[0])
	for i := range h {
		h[i] = atomic.LoadUint32((*uint32)(unsafe.Add(base, 4*i)))
	}
	for i := range second {
		second[i] = atomic.LoadUint32((*uint32)(unsafe.Add(base, 48+4*i)))
	}
	return h, h == second
}

func (w *walIndex) close() error { return syscall.Munmap(w.mem) }
