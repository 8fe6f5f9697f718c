package server

import (
	"context"
	"database/sql"
	"fmt"
)

// productsStored is called by ingestion inside the SQLite transaction that
// records a field's new products of one scene, after the product files exist
// and before the commit: "new imagery for field F". Whatever it writes with
// tx commits or rolls back together with the products, so a crash never
// loses a notification nor announces products that were not stored.
// products holds the field's usable and unusable products of the scene.
//
// It enqueues the §6 notification (webhooks.go) for every active URL the
// field's owner registered: one per field per ingestion, one update per
// usable product, none when no product is usable.
//
// The dispatcher is woken before the commit. That is safe because every
// transaction of the store begins IMMEDIATE (_txlock=immediate): the
// dispatcher's claim waits for this transaction to end, then sees its rows
// (or none, after a rollback).
func (s *Server) productsStored(ctx context.Context, tx *sql.Tx, owner string, field Field, products []StoredProduct) error {
	var active bool
	if err := tx.QueryRowContext(ctx,
		`SELECT EXISTS (SELECT 1 FROM webhook_registrations WHERE owner = ? AND disabled_at IS NULL)`, owner).Scan(&active); err != nil {
		return fmt.Errorf("webhooks of %q: %w", owner, err)
	}
	if !active {
		return nil // the common case: no query per product
	}
	payload, err := notificationTx(ctx, tx, field, products)
	if err != nil {
		return err
	}
	if len(payload.Data) == 0 {
		return nil
	}
	n, err := s.hooks.store.EnqueueTx(ctx, tx, owner, payload)
	if err != nil {
		return err
	}
	if n > 0 {
		s.hooks.dispatcher.Notify()
	}
	return nil
}
