// This file implements the catalogue watcher's Store methods on
// PostgreSQL.

package archive

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

func (s *pgStore) RecordItem(ctx context.Context, it SceneItem) error {
	what := fmt.Sprintf("record item %s", it.ID)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return pgError(what, err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO scene_items (collection, id, datetime, updated, source, state, error, ingested_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (collection, id) DO UPDATE SET datetime = excluded.datetime, updated = excluded.updated,
			source = excluded.source, state = excluded.state, error = excluded.error, ingested_at = excluded.ingested_at`,
		it.Collection, it.ID, it.Datetime.UTC(), it.Updated, it.Source, it.State, it.Error, it.IngestedAt.UTC())
	if err != nil {
		return pgError(what, err)
	}
	for id, v := range it.Fields {
		// A field deleted since the ingestion is skipped.
		_, err := tx.ExecContext(ctx, `INSERT INTO scene_item_fields (collection, item_id, field_id, version)
			SELECT $1, $2, id, $3 FROM fields WHERE id = $4
			ON CONFLICT (collection, item_id, field_id) DO UPDATE SET version = excluded.version`,
			it.Collection, it.ID, v, id)
		if err != nil {
			return pgError(what, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return pgError(what, err)
	}
	return nil
}

const pgItemColumns = `i.collection, i.id, i.datetime, i.updated, i.source, i.state, i.error, i.ingested_at,
	(SELECT count(*) FROM products p WHERE p.scene_id = i.id AND p.usable)`

func (s *pgStore) scanItems(ctx context.Context, what, q string, args ...any) ([]SceneItem, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, pgError(what, err)
	}
	var out []SceneItem
	for rows.Next() {
		var it SceneItem
		if err := rows.Scan(&it.Collection, &it.ID, &it.Datetime, &it.Updated, &it.Source, &it.State, &it.Error, &it.IngestedAt, &it.Usable); err != nil {
			rows.Close()
			return nil, pgError(what, err)
		}
		it.Datetime, it.IngestedAt = it.Datetime.UTC(), it.IngestedAt.UTC()
		it.Fields = map[int64]int64{}
		out = append(out, it)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, pgError(what, err)
	}
	for i := range out {
		if err := s.itemFields(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *pgStore) itemFields(ctx context.Context, it *SceneItem) error {
	rows, err := s.db.QueryContext(ctx, `SELECT field_id, version FROM scene_item_fields WHERE collection = $1 AND item_id = $2`,
		it.Collection, it.ID)
	if err != nil {
		return pgError("fields of item "+it.ID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			return pgError("fields of item "+it.ID, err)
		}
		it.Fields[id] = v
	}
	if err := rows.Err(); err != nil {
		return pgError("fields of item "+it.ID, err)
	}
	return nil
}

func (s *pgStore) SceneItem(ctx context.Context, collection, id string) (SceneItem, error) {
	items, err := s.scanItems(ctx, "item "+id, `SELECT `+pgItemColumns+` FROM scene_items i WHERE i.collection = $1 AND i.id = $2`, collection, id)
	if err != nil {
		return SceneItem{}, err
	}
	if len(items) == 0 {
		return SceneItem{}, fmt.Errorf("item %s of %s: %w", id, collection, ErrNotFound)
	}
	return items[0], nil
}

func (s *pgStore) SceneItems(ctx context.Context, q ItemQuery) ([]SceneItem, error) {
	query := `SELECT ` + pgItemColumns + ` FROM scene_items i WHERE ($1 = '' OR i.collection = $1) ORDER BY i.datetime DESC, i.id COLLATE "C"`
	args := []any{q.Collection}
	if q.Limit > 0 {
		query += ` LIMIT $2`
		args = append(args, q.Limit)
	}
	return s.scanItems(ctx, "list items", query, args...)
}

func (s *pgStore) NewestItem(ctx context.Context, collection string) (time.Time, error) {
	var v sql.NullTime
	err := s.db.QueryRowContext(ctx, `SELECT max(datetime) FROM scene_items WHERE collection = $1 AND state = $2`,
		collection, ItemIngested).Scan(&v)
	if err != nil {
		return time.Time{}, pgError("newest item", err)
	}
	if !v.Valid {
		return time.Time{}, nil
	}
	return v.Time.UTC(), nil
}

func (s *pgStore) WatchedFields(ctx context.Context) (map[int64]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT field_id, version FROM watched_fields`)
	if err != nil {
		return nil, pgError("watched fields", err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, pgError("watched fields", err)
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		return nil, pgError("watched fields", err)
	}
	return out, nil
}

func (s *pgStore) MarkWatched(ctx context.Context, id, version int64) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO watched_fields (field_id, version, at) SELECT id, $1, $2 FROM fields WHERE id = $3
		ON CONFLICT (field_id) DO UPDATE SET version = excluded.version, at = excluded.at`, version, utcNow(), id)
	if err != nil {
		return pgError(fmt.Sprintf("mark field %d watched", id), err)
	}
	return nil
}
