package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/cropkit/cropkit/webhook/pgstore"
)

// jobsDriver is JobsDriver on PostgreSQL: river's database/sql driver on a
// pool of its own, after river's migrations ran under pgstore.MigrationLock
// (concurrent starts wait, then find nothing to do).
func (s *pgStore) jobsDriver(ctx context.Context) (riverdriver.Driver[*sql.Tx], func() error, error) {
	db, err := sql.Open("pgx", s.dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("job queue: %w", err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	drv := riverdatabasesql.New(db)
	if err := migrateJobs(ctx, db, drv); err != nil {
		db.Close()
		return nil, nil, err
	}
	return drv, db.Close, nil
}

func migrateJobs(ctx context.Context, db *sql.DB, drv riverdriver.Driver[*sql.Tx]) error {
	mig, err := rivermigrate.New(drv, nil)
	if err != nil {
		return fmt.Errorf("job queue migrations: %w", err)
	}
	// River's migrations commit one by one (an enum value added is not
	// usable in the transaction that added it): the lock is the session's,
	// held on a connection of its own while they run on others.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate job queue: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, pgstore.MigrationLock); err != nil {
		return fmt.Errorf("migrate job queue: lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, pgstore.MigrationLock)
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate job queue: %w", err)
	}
	return nil
}
