package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/cropkit/cropkit/webhook"
)

// subscriptionsTable holds the topics registrations opted in to. Rows of a
// deleted registration are deleted with it.
const subscriptionsTable = `CREATE TABLE IF NOT EXISTS webhook_subscriptions (
	registration_id INTEGER NOT NULL,
	topic           TEXT    NOT NULL,
	PRIMARY KEY (registration_id, topic)
)`

// Subscribe opts the owner's registration id in to topic (on) or out of
// it. Registrations receive the §6 product notifications always, and a
// topic's notifications (EnqueueTopic) only when subscribed, so a receiver
// built for §6 never gets a payload it does not expect. ErrNotFound when
// the owner has no such registration.
func (s *Store) Subscribe(ctx context.Context, owner string, id int64, topic string, on bool) error {
	if topic == "" {
		return fmt.Errorf("subscribe webhook %d: empty topic", id)
	}
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("subscribe webhook %d to %s: %w", id, topic, err)
	}
	defer tx.Rollback()
	var one int
	err = tx.QueryRowContext(ctx, s.q(`SELECT 1 FROM webhook_registrations WHERE owner = ? AND id = ?`), owner, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("subscribe webhook %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("subscribe webhook %d to %s: %w", id, topic, err)
	}
	stmt := `DELETE FROM webhook_subscriptions WHERE registration_id = ? AND topic = ?`
	if on {
		stmt = `INSERT INTO webhook_subscriptions (registration_id, topic) VALUES (?, ?) ON CONFLICT DO NOTHING`
	}
	if _, err := tx.ExecContext(ctx, s.q(stmt), id, topic); err != nil {
		return fmt.Errorf("subscribe webhook %d to %s: %w", id, topic, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("subscribe webhook %d to %s: %w", id, topic, err)
	}
	return nil
}

// Subscribed reports whether any active registration of owner is
// subscribed to topic (a cheap test before building its notifications).
func (s *Store) Subscribed(ctx context.Context, owner, topic string) (bool, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, s.q(`SELECT count(*) FROM webhook_subscriptions t
		JOIN webhook_registrations r ON r.id = t.registration_id
		WHERE r.owner = ? AND t.topic = ? AND r.disabled_at IS NULL`), owner, topic).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("webhook subscriptions of %q to %s: %w", owner, topic, err)
	}
	return n > 0, nil
}

// EnqueueTopic adds one pending delivery of body (a JSON document) to each
// active registration of owner subscribed to topic, and returns how many.
// key identifies the notification: each delivery's webhook-id is derived
// from it and the registration ("msg_" + key + "_" + id), so enqueueing the
// same key again adds nothing — a notification goes out once per
// registration however often it is computed. key must be at most 200
// characters of [A-Za-z0-9_.-].
func (s *Store) EnqueueTopic(ctx context.Context, owner, topic, key string, body []byte) (int, error) {
	if !validKey(key) {
		return 0, fmt.Errorf("enqueue %s webhooks of %q: invalid key %q", topic, owner, key)
	}
	now := ms(s.now())
	res, err := s.DB.ExecContext(ctx, s.q(
		`INSERT INTO webhook_deliveries (message_id, registration_id, owner, url, body, status, created_at, next_attempt_at)
		 SELECT 'msg_' || CAST(? AS TEXT) || '_' || CAST(r.id AS TEXT), r.id, r.owner, r.url, ?, ?, ?, ?
		 FROM webhook_registrations r JOIN webhook_subscriptions t ON t.registration_id = r.id
		 WHERE r.owner = ? AND t.topic = ? AND r.disabled_at IS NULL ORDER BY r.id
		 ON CONFLICT (message_id) DO NOTHING`),
		key, body, string(webhook.StatusPending), now, now, owner, topic)
	if err != nil {
		return 0, fmt.Errorf("enqueue %s webhooks of %q: %w", topic, owner, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("enqueue %s webhooks of %q: %w", topic, owner, err)
	}
	return int(n), nil
}

func validKey(key string) bool {
	if key == "" || len(key) > 200 {
		return false
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// fillTopics sets the Topics of the owner's registrations regs.
func (s *Store) fillTopics(ctx context.Context, owner string, regs []Registration) error {
	rows, err := s.DB.QueryContext(ctx, s.q(`SELECT t.registration_id, t.topic FROM webhook_subscriptions t
		JOIN webhook_registrations r ON r.id = t.registration_id WHERE r.owner = ? ORDER BY t.topic`), owner)
	if err != nil {
		return fmt.Errorf("webhook topics of %q: %w", owner, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var topic string
		if err := rows.Scan(&id, &topic); err != nil {
			return fmt.Errorf("webhook topics of %q: %w", owner, err)
		}
		if i := slices.IndexFunc(regs, func(r Registration) bool { return r.ID == id }); i >= 0 {
			regs[i].Topics = append(regs[i].Topics, topic)
		}
	}
	return rows.Err()
}
