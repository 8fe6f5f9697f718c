package store

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/cropkit/cropkit/archive"
)

// DBFile is the database file name inside a data directory.
const DBFile = "cropkit.db"

// DefaultURL is the database of the data directory dir (the embedded default).
func DefaultURL(dir string) string { return "sqlite:" + filepath.Join(dir, DBFile) }

// Open opens the Store of a database URL:
//
//	sqlite:PATH (the embedded database, created when missing)
//	postgres://USER:PASS@HOST:PORT/DB?sslmode=disable (or postgresql://)
func Open(ctx context.Context, dbURL string) (archive.Store, error) {
	switch {
	case strings.HasPrefix(dbURL, "postgres://"), strings.HasPrefix(dbURL, "postgresql://"):
		return OpenPostgres(ctx, dbURL)
	case strings.HasPrefix(dbURL, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(dbURL, "sqlite:"), "//")
		return OpenSQLite(ctx, path, true)
	default:
		return nil, archive.Invalid("database URL %q: want sqlite:PATH or postgres://…", redactDSN(dbURL))
	}
}

// redactDSN hides a URL's password for messages.
func redactDSN(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
