package store

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
)

// Several processes' job queues starting together on one database migrate
// river's tables once and all get a working driver.
func TestPostgresJobsDriverConcurrentStarts(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	const n = 4
	stores := make([]*pgStore, n)
	closers := make([]func() error, n)
	errs := make([]error, n)
	for i := range n {
		stores[i] = openPG(t, dsn).(*pgStore)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, closers[i], errs[i] = JobsDriver(ctx, stores[i]) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "driver %d", i)
		require.NoError(t, closers[i]())
	}
	db := stores[0].db
	var versions, jobs int
	require.NoError(t, db.QueryRow(`SELECT count(*), count(DISTINCT version) FROM river_migration`).Scan(&versions, &jobs))
	assert.Positive(t, versions)
	assert.Equal(t, versions, jobs, "each river migration recorded once")
	var table sql.NullString
	require.NoError(t, db.QueryRow(`SELECT to_regclass('river_job')::text`).Scan(&table))
	assert.Equal(t, "river_job", table.String)
}
