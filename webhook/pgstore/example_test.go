package pgstore_test

import (
	"context"
	"database/sql"
	"fmt"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/cropkit/cropkit/webhook/pgstore"
)

// The outbox on PostgreSQL: migrate once per start (safe from several
// processes at once), then use the same sqlstore.Store API as on SQLite.
func Example() {
	ctx := context.Background()
	db, err := sql.Open("pgx", "postgres://cropkit@127.0.0.1:5432/cropkit?sslmode=disable")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	if err := pgstore.Migrate(ctx, db); err != nil {
		fmt.Println(err)
		return
	}
	store := pgstore.New(db) // a *sqlstore.Store in the Postgres dialect
	fmt.Println(store.Dialect)
	reg, err := store.Register(ctx, "alice", "https://farm.example.com/hook")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reg.Created)
}
