// This file implements the catalogue watcher's Store methods, on both
// databases (see rowStore).

package store

import (
	"context"
	"fmt"
	"time"

	"github.com/cropkit/cropkit/archive"
)

func (s *rowStore) RecordItem(ctx context.Context, it archive.SceneItem) error {
	what := fmt.Sprintf("record item %s", it.ID)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.d.wrap(what, err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO scene_items (collection, id, datetime, updated, source, state, error, ingested_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (collection, id) DO UPDATE SET datetime = excluded.datetime, updated = excluded.updated,
			source = excluded.source, state = excluded.state, error = excluded.error, ingested_at = excluded.ingested_at`),
		it.Collection, it.ID, s.d.stampNano(it.Datetime), it.Updated, it.Source, it.State, it.Error, s.d.stampNano(it.IngestedAt))
	if err != nil {
		return s.d.wrap(what, err)
	}
	for id, v := range it.Fields {
		// A field deleted since the ingestion is skipped (foreign key).
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO scene_item_fields (collection, item_id, field_id, version)
			SELECT ?, ?, id, ? FROM fields WHERE id = ?
			ON CONFLICT (collection, item_id, field_id) DO UPDATE SET version = excluded.version`),
			it.Collection, it.ID, v, id)
		if err != nil {
			return s.d.wrap(what, err)
		}
	}
	return s.d.wrapOrNil(what, tx.Commit())
}

const itemColumns = `i.collection, i.id, i.datetime, i.updated, i.source, i.state, i.error, i.ingested_at,
	(SELECT count(*) FROM products p WHERE p.scene_id = i.id AND p.usable)`

func (s *rowStore) scanItems(ctx context.Context, what, q string, args ...any) ([]archive.SceneItem, error) {
	rows, err := s.rdb.QueryContext(ctx, s.q(q), args...)
	if err != nil {
		return nil, s.d.wrap(what, err)
	}
	var out []archive.SceneItem
	for rows.Next() {
		var it archive.SceneItem
		if err := rows.Scan(&it.Collection, &it.ID, dbTime{&it.Datetime}, &it.Updated, &it.Source, &it.State, &it.Error,
			dbTime{&it.IngestedAt}, &it.Usable); err != nil {
			rows.Close()
			return nil, s.d.wrap(what, err)
		}
		it.Fields = map[int64]int64{}
		out = append(out, it)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.d.wrap(what, err)
	}
	for i := range out {
		if err := s.itemFields(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *rowStore) itemFields(ctx context.Context, it *archive.SceneItem) error {
	rows, err := s.rdb.QueryContext(ctx, s.q(`SELECT field_id, version FROM scene_item_fields WHERE collection = ? AND item_id = ?`),
		it.Collection, it.ID)
	if err != nil {
		return s.d.wrap("fields of item "+it.ID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			return s.d.wrap("fields of item "+it.ID, err)
		}
		it.Fields[id] = v
	}
	return s.d.wrapOrNil("fields of item "+it.ID, rows.Err())
}

func (s *rowStore) SceneItem(ctx context.Context, collection, id string) (archive.SceneItem, error) {
	items, err := s.scanItems(ctx, "item "+id, `SELECT `+itemColumns+` FROM scene_items i WHERE i.collection = ? AND i.id = ?`, collection, id)
	if err != nil {
		return archive.SceneItem{}, err
	}
	if len(items) == 0 {
		return archive.SceneItem{}, fmt.Errorf("item %s of %s: %w", id, collection, archive.ErrNotFound)
	}
	return items[0], nil
}

func (s *rowStore) SceneItems(ctx context.Context, q archive.ItemQuery) ([]archive.SceneItem, error) {
	query := `SELECT ` + itemColumns + ` FROM scene_items i WHERE (? = '' OR i.collection = ?) ORDER BY i.datetime DESC, i.id` + s.d.collateC
	args := []any{q.Collection, q.Collection}
	if q.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, q.Limit)
	}
	return s.scanItems(ctx, "list items", query, args...)
}

func (s *rowStore) NewestItem(ctx context.Context, collection string) (time.Time, error) {
	var t time.Time // zero when the collection has no ingested item (NULL)
	err := s.rdb.QueryRowContext(ctx, s.q(`SELECT max(datetime) FROM scene_items WHERE collection = ? AND state = ?`),
		collection, archive.ItemIngested).Scan(dbTime{&t})
	if err != nil {
		return time.Time{}, s.d.wrap("newest item", err)
	}
	return t, nil
}

func (s *rowStore) WatchedFields(ctx context.Context) (map[int64]int64, error) {
	return s.idVersions(ctx, s.rdb, "watched fields", `SELECT field_id, version FROM watched_fields`)
}

func (s *rowStore) MarkWatched(ctx context.Context, id, version int64) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO watched_fields (field_id, version, at) SELECT id, ?, ? FROM fields WHERE id = ?
		ON CONFLICT (field_id) DO UPDATE SET version = excluded.version, at = excluded.at`), version, s.d.stamp(time.Now()), id)
	if err != nil {
		return s.d.wrap(fmt.Sprintf("mark field %d watched", id), err)
	}
	return nil
}
