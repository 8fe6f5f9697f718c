package archive

// What the core needs from storage: Store (the rows) and Blobs (the files).
// archive/store and archive/blobs implement them; the core imports neither.

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/webhook"
)

// Store is the archive's database: accounts, tokens, fields, seasons,
// product rows and the webhook outbox. It holds no algorithm and no files
// (those are Blobs). archive/store implements it: store.OpenSQLite the
// embedded database and store.OpenPostgres the server one, sharing one
// implementation of every query and transaction flow over a dialect.
//
// Errors are wrapped kinds of this package (ErrNotFound, ErrExists,
// ErrQuota, ErrFieldChanged, ErrBusy).
type Store interface {
	Close() error

	// CreateUser adds an account with a password hash ("" for token-only).
	CreateUser(ctx context.Context, u NewUser, passwordHash string) (User, error)
	UserByName(ctx context.Context, name string) (User, error)
	CountUsers(ctx context.Context) (int, error)
	// PasswordHash is the account called name with its password hash.
	PasswordHash(ctx context.Context, name string) (User, string, error)
	InsertToken(ctx context.Context, userID int64, hash string, created, expires time.Time) (int64, error)
	// UserByToken is the account of a token hash that is valid at now.
	UserByToken(ctx context.Context, hash string, now time.Time) (User, Token, error)
	Tokens(ctx context.Context, userID int64) ([]Token, error)
	// RevokeTokens deletes the account's token id, or all when id is 0; it
	// returns how many.
	RevokeTokens(ctx context.Context, userID, id int64) (int, error)

	// InsertField stores a new field, refusing one beyond maxPerUser (0: no limit).
	InsertField(ctx context.Context, f Field, maxPerUser int) (Field, error)
	// UpdateField overwrites group, labels, indices and geometry of f.ID;
	// with newOutline its products are deleted and its version increases.
	// It returns the bundle keys no row references any more (delete them
	// after this returns: never before the rows are gone).
	UpdateField(ctx context.Context, f Field, newOutline bool) (Field, []string, error)
	// DeleteField deletes the field with its rows; its blobs go after.
	DeleteField(ctx context.Context, id int64) error
	FieldByID(ctx context.Context, id int64) (Field, error)
	FieldByName(ctx context.Context, userID int64, name string) (Field, error)
	// FieldSummary is FieldByName without the geometry.
	FieldSummary(ctx context.Context, userID int64, name string) (Field, error)
	// Fields lists an account's fields (every account's with userID 0) by owner and name.
	Fields(ctx context.Context, userID int64) ([]Field, error)
	// FieldsIntersecting lists the fields whose lon/lat box meets b.
	FieldsIntersecting(ctx context.Context, b orb.Bound) ([]Field, error)
	// FieldVersions maps every field id to its outline version (for sweeps).
	FieldVersions(ctx context.Context) (map[int64]int64, error)

	Seasons(ctx context.Context, fieldID int64) ([]Season, error)
	// UpdateSeasons replaces the seasons by update(current) in one transaction.
	UpdateSeasons(ctx context.Context, fieldID int64, update func([]Season) ([]Season, error)) error

	// RecordProducts records one field's products of one date (see ProductRecord).
	RecordProducts(ctx context.Context, rec ProductRecord) (RecordResult, error)
	Products(ctx context.Context, q ProductQuery) ([]Product, error)
	// Bundles is every bundle key a row references.
	Bundles(ctx context.Context) (map[string]bool, error)

	// Webhooks is the outbox and registrations on the same database, so
	// notifications commit with the products they announce.
	Webhooks() Outbox

	// RecordScene remembers where an ingested scene came from.
	RecordScene(ctx context.Context, r SceneRecord) error
	// ScenesIntersecting lists the recorded scenes whose lon/lat box meets b,
	// dated from..to (inclusive, "" = open), by date.
	ScenesIntersecting(ctx context.Context, b orb.Bound, from, to string) ([]SceneRecord, error)

	// RecordItem upserts a catalogue item's row; its Fields are added to
	// those already recorded (a field's version replaced).
	RecordItem(ctx context.Context, it SceneItem) error
	// SceneItem is one recorded item (ErrNotFound when none).
	SceneItem(ctx context.Context, collection, id string) (SceneItem, error)
	// SceneItems lists recorded items, newest acquisition first.
	SceneItems(ctx context.Context, q ItemQuery) ([]SceneItem, error)
	// NewestItem is the latest acquisition recorded in collection (zero when none).
	NewestItem(ctx context.Context, collection string) (time.Time, error)
	// WatchedFields maps each field whose backfill was enqueued to the
	// outline version it was for.
	WatchedFields(ctx context.Context) (map[int64]int64, error)
	// MarkWatched records that field id's backfill for version is enqueued.
	MarkWatched(ctx context.Context, id, version int64) error
}

// SceneRecord is where an ingested scene came from.
type SceneRecord struct {
	ID     string
	Source string // a scene folder, a STAC item path or URL
	Date   string // YYYY-MM-DD
	Bound  orb.Bound
}

// Outbox is the webhook registrations and the durable outbox the dispatcher delivers.
type Outbox interface {
	webhook.Store
	RegisterLimit(ctx context.Context, owner, rawURL string, max int) (webhook.Registration, error)
	List(ctx context.Context, owner string) ([]webhook.Registration, error)
	Delete(ctx context.Context, owner string, id int64) error
	DeleteURL(ctx context.Context, owner, rawURL string) error
	Deliveries(ctx context.Context, owner string, limit int) ([]webhook.DeliveryState, error)
	// Topics a registration opts in to (field events): see archive/timeseries.go.
	Subscribe(ctx context.Context, owner string, id int64, topic string, on bool) error
	Subscribed(ctx context.Context, owner, topic string) (bool, error)
	EnqueueTopic(ctx context.Context, owner, topic, key string, body []byte) (int, error)
}

// ProductRecord is one field's products of one scene date, recorded with
// the bundle holding their files and the notification they cause.
type ProductRecord struct {
	Field Field // ID and Version are checked: ErrFieldChanged when either moved
	Date  string
	// Family is the sensor family of the products (the rows of Date it
	// replaces); "" means Sentinel-2.
	Family   string
	Products []Product // every index ingested, usable or not; usable ones carry Bundle and Digest
	// Notify builds the §6 payload of the products that are new (content
	// unlike the stored row's), given the previous usable product of each
	// index before Date. It is called only when the owner has an active
	// webhook; a payload without data sends nothing.
	Notify func(changed []Product, prev map[string]Product) webhook.Payload
}

// RecordResult is what RecordProducts did.
type RecordResult struct {
	// Replaced are bundle keys no row references any more: delete them now.
	Replaced []string
	// Notified counts the deliveries enqueued.
	Notified int
}

// Blobs holds the archive's files (product bundles, uploads) by key, a
// slash-separated relative path. Put is atomic: readers see the old content
// or the new, never part. archive/blobs implements it: blobs.Dir (files)
// and blobs.Bucket (object storage).
type Blobs interface {
	Put(ctx context.Context, key string, data []byte) error
	// Get returns ErrNotFound (wrapped) for a missing key.
	Get(ctx context.Context, key string) ([]byte, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every key under prefix (and for leftover temporary
	// files, whose Temp is set).
	List(ctx context.Context, prefix string, fn func(BlobInfo) error) error
}

// BlobInfo describes one listed blob.
type BlobInfo struct {
	Key     string
	ModTime time.Time
	// Temp marks an unfinished write (a crash between write and rename).
	Temp bool
}

// BlobOpener is implemented by Blobs that can read part of a blob (a file,
// an object with ranged reads): a download reads one member of a bundle
// without reading the rest.
type BlobOpener interface {
	// Open returns the blob as an io.ReaderAt of size bytes; close it after.
	Open(ctx context.Context, key string) (r io.ReaderAt, size int64, closer io.Closer, err error)
}

// openBlob opens key for reading at offsets: through BlobOpener when the
// blobs offer it (a zip member or directory is read without the rest),
// else from the whole blob in memory.
func (a *Archive) openBlob(ctx context.Context, key string) (io.ReaderAt, int64, io.Closer, error) {
	if o, ok := a.blobs.(BlobOpener); ok {
		return o.Open(ctx, key)
	}
	data, err := a.blobs.Get(ctx, key)
	if err != nil {
		return nil, 0, nil, err
	}
	return bytes.NewReader(data), int64(len(data)), io.NopCloser(nil), nil
}
