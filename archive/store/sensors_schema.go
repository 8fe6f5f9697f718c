package store

// Sensors in storage: every product row names its sensor ("sentinel-2a",
// "landsat-8", "sentinel-1a", … or the mission when the source names no
// satellite) and its family ("sentinel-2", "landsat", "sentinel-1"). The
// family is part of the key: one field, index and date may hold one
// Sentinel-2 and one Landsat product (both compute ndvi), each notified
// once. Rows from before sensors were Sentinel-2.

// migrationSensors is SQLite's step: a primary key cannot be altered, so
// the table is rebuilt (foreign keys are off during migrations).
const migrationSensors = `CREATE TABLE products_v6 (
		field_id     INTEGER NOT NULL REFERENCES fields(id) ON DELETE CASCADE,
		idx          TEXT NOT NULL,
		date         TEXT NOT NULL,
		family       TEXT NOT NULL DEFAULT 'sentinel-2',
		sensor       TEXT NOT NULL DEFAULT 'sentinel-2',
		scene_id     TEXT NOT NULL,
		usable       INTEGER NOT NULL,
		cloud_cover  REAL NOT NULL,
		mean REAL, median REAL, std REAL, min REAL, max REAL, p25 REAL, p75 REAL,
		num          INTEGER NOT NULL,
		field_pixels INTEGER NOT NULL,
		epsg INTEGER NOT NULL, x0 REAL NOT NULL, y0 REAL NOT NULL, dx REAL NOT NULL, dy REAL NOT NULL,
		cols INTEGER NOT NULL, rows INTEGER NOT NULL,
		ingested_at  TEXT NOT NULL,
		bundle       TEXT NOT NULL DEFAULT '',
		digest       TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (field_id, idx, date, family)
	);
	INSERT INTO products_v6 (field_id, idx, date, scene_id, usable, cloud_cover, mean, median, std, min, max, p25, p75,
		num, field_pixels, epsg, x0, y0, dx, dy, cols, rows, ingested_at, bundle, digest)
		SELECT field_id, idx, date, scene_id, usable, cloud_cover, mean, median, std, min, max, p25, p75,
		num, field_pixels, epsg, x0, y0, dx, dy, cols, rows, ingested_at, bundle, digest FROM products;
	DROP TABLE products;
	ALTER TABLE products_v6 RENAME TO products;
	CREATE INDEX products_scene ON products (scene_id);`

// pgMigrationSensors is PostgreSQL's step.
const pgMigrationSensors = `ALTER TABLE products ADD COLUMN family TEXT NOT NULL DEFAULT 'sentinel-2';
	ALTER TABLE products ADD COLUMN sensor TEXT NOT NULL DEFAULT 'sentinel-2';
	ALTER TABLE products DROP CONSTRAINT products_pkey;
	ALTER TABLE products ADD PRIMARY KEY (field_id, idx, date, family);`
