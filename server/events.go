package server

import (
	"context"
	"database/sql"
)

// productsStored is called by ingestion inside the SQLite transaction that
// records a field's new products of one scene, after the product files exist
// and before the commit: "new imagery for field F". Whatever it writes with
// tx (the webhook outbox) commits or rolls back together with the products.
// products holds the field's usable and unusable products of the scene.
//
// It does nothing yet; the webhook issue fills it in.
func (s *Server) productsStored(ctx context.Context, tx *sql.Tx, owner string, field Field, products []StoredProduct) error {
	return nil
}
