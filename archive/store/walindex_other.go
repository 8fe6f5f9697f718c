//go:build !unix

package store

import "errors"

// walIndex is not mapped on this system: the SQLite store then reads its
// change counters on every check (changeWatch).
type walIndex struct{}

func mapWALIndex(string) (*walIndex, error) { return nil, errors.ErrUnsupported }

func (*walIndex) header() (walHeader, bool) { return walHeader{}, false }

func (*walIndex) close() error { return nil }
